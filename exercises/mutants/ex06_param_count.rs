// Wrong solutions of ex06_param_count.

// MUTANT: layer_norm_weight_only — a LayerNorm counted as d (forgets β)
    let (d, f) = (c.d_model, c.d_ff);
    let linear = |n: i64, m: i64| n * m + m;
    let (mha, ffn, ln) = (4 * linear(d, d), linear(d, f) + linear(f, d), d);
    let encoder = c.src_vocab * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    let decoder = c.tgt_vocab * d + c.num_layers * (2 * mha + ffn + 3 * ln) + ln;
    encoder + decoder + linear(d, c.tgt_vocab)

// MUTANT: position_tables — counts the two sinusoidal tables as parameters
    let (d, f) = (c.d_model, c.d_ff);
    let linear = |n: i64, m: i64| n * m + m;
    let (mha, ffn, ln) = (4 * linear(d, d), linear(d, f) + linear(f, d), 2 * d);
    let encoder = (c.src_vocab + c.max_len) * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    let decoder = (c.tgt_vocab + c.max_len) * d + c.num_layers * (2 * mha + ffn + 3 * ln) + ln;
    encoder + decoder + linear(d, c.tgt_vocab)

// MUTANT: no_cross_attention — a decoder layer counted like an encoder layer
    let (d, f) = (c.d_model, c.d_ff);
    let linear = |n: i64, m: i64| n * m + m;
    let (mha, ffn, ln) = (4 * linear(d, d), linear(d, f) + linear(f, d), 2 * d);
    let encoder = c.src_vocab * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    let decoder = c.tgt_vocab * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    encoder + decoder + linear(d, c.tgt_vocab)

// MUTANT: src_vocab_out — the output projection sized by the source vocabulary
    let (d, f) = (c.d_model, c.d_ff);
    let linear = |n: i64, m: i64| n * m + m;
    let (mha, ffn, ln) = (4 * linear(d, d), linear(d, f) + linear(f, d), 2 * d);
    let encoder = c.src_vocab * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    let decoder = c.tgt_vocab * d + c.num_layers * (2 * mha + ffn + 3 * ln) + ln;
    encoder + decoder + linear(d, c.src_vocab)

// MUTANT: built_and_counted — builds the model and counts its variables: right number, exercise not done
    let vs = tch::nn::VarStore::new(Device::Cpu);
    let _model = transformer_course::transformer::Transformer::new(vs.root(), *c)
        .expect("a valid config");
    transformer_course::layers::parameter_count(&vs)

// MUTANT: helper_in_another_file — builds and counts through a helper put in another exercise file
    crate::ch13_ablation::built_size(c)
// APPEND TO ch13_ablation.rs:
pub fn built_size(c: &transformer_course::config::TransformerConfig) -> i64 {
    let vs = tch::nn::VarStore::new(tch::Device::Cpu);
    let _m = transformer_course::transformer::Transformer::new(vs.root(), c.clone()).unwrap();
    transformer_course::layers::parameter_count(&vs)
}

// MUTANT: via_closure — builds and counts inside a closure
    let built = |c: TransformerConfig| {
        let vs = tch::nn::VarStore::new(Device::Cpu);
        let _m = transformer_course::transformer::Transformer::new(vs.root(), c).expect("valid");
        transformer_course::layers::parameter_count(&vs)
    };
    built(*c)

// MUTANT: via_module_path — builds and counts through a helper module's path
    size_helpers::size(c)
// APPEND:
mod size_helpers {
    use transformer_course::config::TransformerConfig;
    pub fn size(c: &TransformerConfig) -> i64 {
        let vs = tch::nn::VarStore::new(tch::Device::Cpu);
        let _m = transformer_course::transformer::Transformer::new(vs.root(), *c).expect("valid");
        transformer_course::layers::parameter_count(&vs)
    }
}

// MUTANT: via_reexport — libtorch's VarStore re-exported under another name by another exercise file
    let vs = crate::ch08_reverse_data::Store::new(Device::Cpu);
    let _m = transformer_course::transformer::Transformer::new(vs.root(), *c).expect("valid");
    vs.trainable_variables().iter().map(|t| t.numel() as i64).sum()
// APPEND TO ch08_reverse_data.rs:
pub use tch::nn::VarStore as Store;
