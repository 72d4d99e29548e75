// Wrong solutions of ex11_cross_map.

// MUTANT: first_layer — the first decoder layer's map instead of the last
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let (_, weights) =
            model.decode_with_weights(tgt_in, &memory, &src_mask, make_causal_mask, false);
        weights[0].cross_attn.get(0).mean_dim(0, false, Kind::Float)
    })

// MUTANT: self_attention — the decoder's self-attention instead of its cross-attention
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let (_, weights) =
            model.decode_with_weights(tgt_in, &memory, &src_mask, make_causal_mask, false);
        let last = weights.last().expect("at least one layer");
        last.self_attn.get(0).mean_dim(0, false, Kind::Float)
    })

// MUTANT: first_head — head 0 instead of the mean over the heads
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let (_, weights) =
            model.decode_with_weights(tgt_in, &memory, &src_mask, make_causal_mask, false);
        weights.last().expect("at least one layer").cross_attn.get(0).get(0)
    })

// MUTANT: train_mode — encodes and decodes with train = true (dropout on)
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, true);
        let (_, weights) =
            model.decode_with_weights(tgt_in, &memory, &src_mask, make_causal_mask, true);
        weights.last().expect("a layer").cross_attn.get(0).mean_dim(0, false, Kind::Float)
    })

// MUTANT: chapter_pass — takes the weights from chapter 11's every_weight: right numbers, exercise not done
    let (_, dec_w) = transformer_course::viz::every_weight(model, src, tgt_in);
    let last = &dec_w.last().expect("at least one layer").cross_attn;
    last.get(0).mean_dim(0, false, Kind::Float)

// MUTANT: macro_outside — chapter 11's pass behind a macro defined outside the region
    let (_, dec_w) = crate::weights_of!(model, src, tgt_in);
    let last = &dec_w.last().expect("at least one layer").cross_attn;
    last.get(0).mean_dim(0, false, Kind::Float)
// APPEND:
#[macro_export]
macro_rules! weights_of {
    ($m:expr, $s:expr, $t:expr) => {
        transformer_course::viz::every_weight($m, $s, $t)
    };
}

// MUTANT: four_heads — sums over the heads and divides by 4, the course's head count
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let (_, weights) =
            model.decode_with_weights(tgt_in, &memory, &src_mask, make_causal_mask, false);
        let last = &weights.last().expect("at least one layer").cross_attn;
        last.get(0).sum_dim_intlist(0, false, Kind::Float) / 4.0
    })

// MUTANT: via_closure — chapter 11's pass called inside a closure
    let pass = || transformer_course::viz::every_weight(model, src, tgt_in);
    let (_, dec_w) = pass();
    let last = &dec_w.last().expect("at least one layer").cross_attn;
    last.get(0).mean_dim(0, false, Kind::Float)

// MUTANT: via_module_path — chapter 11's pass through a helper module's path
    let (_, dec_w) = map_helpers::pass(model, src, tgt_in);
    let last = &dec_w.last().expect("at least one layer").cross_attn;
    last.get(0).mean_dim(0, false, Kind::Float)
// APPEND:
mod map_helpers {
    pub use transformer_course::viz::every_weight as pass;
}

// MUTANT: via_reexport — chapter 11's pass re-exported under another name by another exercise file
    let (_, dec_w) = crate::ch08_reverse_data::all_weights(model, src, tgt_in);
    let last = &dec_w.last().expect("at least one layer").cross_attn;
    last.get(0).mean_dim(0, false, Kind::Float)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::viz::every_weight as all_weights;
