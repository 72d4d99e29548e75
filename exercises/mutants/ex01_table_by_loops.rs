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

// MUTANT: halves — every sine in the first half of the row, every cosine in the second (the layout some libraries use)
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        let angles: Vec<f64> = (0..d_model / 2)
            .map(|i| pos as f64 / 10000f64.powf(2.0 * i as f64 / d_model as f64))
            .collect();
        values.extend(angles.iter().map(|a| a.sin() as f32));
        values.extend(angles.iter().map(|a| a.cos() as f32));
    }
    Tensor::from_slice(&values).view([max_len, d_model])

// MUTANT: positions_from_one — positions counted 1..=max_len: the first row is pe[1]
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 1..=max_len {
        for i in 0..d_model / 2 {
            let exponent = 2.0 * i as f64 / d_model as f64;
            let angle = pos as f64 / 10000f64.powf(exponent);
            values.push(angle.sin() as f32);
            values.push(angle.cos() as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])

// MUTANT: column_exponent — each column's own index in the exponent: the cosine of pair i uses (2i+1)/d_model
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        for j in 0..d_model {
            let angle = pos as f64 / 10000f64.powf(j as f64 / d_model as f64);
            values.push(if j % 2 == 0 { angle.sin() } else { angle.cos() } as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])

// MUTANT: course_width — the course's d_model 128 written into the exponent
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        for i in 0..d_model / 2 {
            let angle = pos as f64 / 10000f64.powf(2.0 * i as f64 / 128.0);
            values.push(angle.sin() as f32);
            values.push(angle.cos() as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])
