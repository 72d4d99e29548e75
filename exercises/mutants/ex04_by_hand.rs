// Wrong solutions of ex04_by_hand.

// MUTANT: no_ln_final — forgets the final LayerNorm
    let mask = make_padding_mask(src);
    let mut x = enc.embed.forward(src, false);
    for layer in &enc.layers {
        x = layer.forward(&x, &mask, false).0;
    }
    x

// MUTANT: train_mode — runs the layers with train = true: dropout is on
    let mask = make_padding_mask(src);
    let mut x = enc.embed.forward(src, true);
    for layer in &enc.layers {
        x = layer.forward(&x, &mask, true).0;
    }
    x.apply(&enc.ln_final)

// MUTANT: first_layer_only — returns after the first layer
    let mask = make_padding_mask(src);
    let x = enc.embed.forward(src, false);
    enc.layers[0].forward(&x, &mask, false).0.apply(&enc.ln_final)

// MUTANT: library_forward — calls Encoder::forward: right numbers, exercise not done
    enc.forward(src, &make_padding_mask(src), false)

// MUTANT: type_alias — Encoder::forward through a type alias declared outside the region
    Enc::forward(enc, src, &make_padding_mask(src), false)
// APPEND:
type Enc = Encoder;

// MUTANT: with_weights — Encoder::forward_with_weights, the weights dropped
    enc.forward_with_weights(src, &make_padding_mask(src), false).0

// MUTANT: rebound — Encoder::forward on another name for the encoder
    let e = &enc;
    e.forward(src, &make_padding_mask(src), false)

// MUTANT: helper_parameter — a helper outside the region runs Encoder::forward on its parameter
    run_all(enc, src)
// APPEND:
fn run_all(e: &Encoder, s: &Tensor) -> Tensor {
    e.forward(s, &make_padding_mask(s), false)
}

// MUTANT: via_closure — Encoder::forward called inside a closure
    let run = |s: &Tensor| enc.forward(s, &make_padding_mask(s), false);
    run(src)

// MUTANT: via_module_path — Encoder::forward through a helper module's path
    encode_helpers::encode(enc, src)
// APPEND:
mod encode_helpers {
    use tch::Tensor;
    pub fn encode(e: &transformer_course::encoder::Encoder, s: &Tensor) -> Tensor {
        let mask = transformer_course::transformer::make_padding_mask(s);
        e.forward_with_weights(s, &mask, false).0
    }
}

// MUTANT: via_reexport — Encoder re-exported under another name by another exercise file, its forward called by path
    crate::ch08_reverse_data::Enc::forward(enc, src, &make_padding_mask(src), false)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::encoder::Encoder as Enc;
