// Wrong solutions of ex01_table_by_loops.

// MUTANT: exponent_i — the exponent i/d_model instead of 2i/d_model
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        for i in 0..d_model / 2 {
            let angle = pos as f64 / 10000f64.powf(i as f64 / d_model as f64);
            values.push(angle.sin() as f32);
            values.push(angle.cos() as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])

// MUTANT: cos_first — cos in the even columns, sin in the odd ones
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        for i in 0..d_model / 2 {
            let exponent = 2.0 * i as f64 / d_model as f64;
            let angle = pos as f64 / 10000f64.powf(exponent);
            values.push(angle.cos() as f32);
            values.push(angle.sin() as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])

// MUTANT: library_table — returns the course's tensor version: right numbers, exercise not done
    transformer_course::embedding::sinusoidal_position_encoding(max_len, d_model)

// MUTANT: const_outside — the course's table through a function pointer declared outside the region
    TABLE(max_len, d_model)
// APPEND:
const TABLE: fn(i64, i64) -> Tensor = transformer_course::embedding::sinusoidal_position_encoding;

// MUTANT: embedding_of_pad — the course's embedding layer run on PAD ids: its output is the table
    let cfg = TransformerConfig { d_model, max_len, ..TransformerConfig::reverse_task() };
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let layer = TokenAndPosition::new(vs.root(), 13, &cfg);
    let pad = Tensor::full(
        [1, max_len],
        transformer_course::vocab::PAD_ID,
        (Kind::Int64, tch::Device::Cpu),
    );
    tch::no_grad(|| layer.forward(&pad, false).squeeze_dim(0))

// MUTANT: via_closure — the course's table called inside a closure
    let table = |l, d| transformer_course::embedding::sinusoidal_position_encoding(l, d);
    table(max_len, d_model)

// MUTANT: via_module_path — the course's table through a helper module's path
    waves_helpers::table(max_len, d_model)
// APPEND:
mod waves_helpers {
    pub use transformer_course::embedding as emb;
    pub fn table(l: i64, d: i64) -> tch::Tensor {
        emb::sinusoidal_position_encoding(l, d)
    }
}

// MUTANT: via_reexport — the course's table re-exported under another name by another exercise file
    crate::ch08_reverse_data::waves(max_len, d_model)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::embedding::sinusoidal_position_encoding as waves;
