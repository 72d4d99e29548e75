// Wrong solutions of ex03_param_budget.

// MUTANT: two_thirds — Llama's rule of thumb, ⅔·d_ff, rounded down
    2 * d_ff / 3

// MUTANT: floor_only — solves the equation but never tries the integer above
    (2 * d_model * d_ff + d_ff) / (3 * d_model + 2)

// MUTANT: no_biases — matches the weights only: 3·d·h = 2·d·d_ff
    let h = 2 * d_ff / 3;
    let weights = |h: i64| 3 * d_model * h;
    if (weights(h + 1) - 2 * d_model * d_ff).abs() < (weights(h) - 2 * d_model * d_ff).abs() {
        h + 1
    } else {
        h
    }

// MUTANT: gate_bias_once — counts lin_in's bias as h instead of 2h
    let target = 2 * d_model * d_ff + d_ff;
    let swiglu = |h: i64| 3 * d_model * h + h;
    let h = target / (3 * d_model + 1);
    if (swiglu(h + 1) - target).abs() < (swiglu(h) - target).abs() {
        h + 1
    } else {
        h
    }

// MUTANT: rounded_two_thirds — ⅔·d_ff rounded to the nearest integer
    (2 * d_ff + 1) / 3

// MUTANT: always_up — rounds the real solution up
    let target = 2 * d_model * d_ff + d_ff;
    (target + 3 * d_model + 1) / (3 * d_model + 2)

// MUTANT: build_and_search — builds a FeedForward and SwiGluFeedForward for every candidate width on a scratch VarStore and counts them with parameter_count, keeping the closest: the right integer, found by building modules instead of solving the equation
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let mut cfg = TransformerConfig::reverse_task();
    cfg.d_model = d_model;
    cfg.d_ff = d_ff;
    let _ = transformer_course::feed_forward::FeedForward::new(&vs.root() / "gelu", &cfg);
    let target = transformer_course::layers::parameter_count(&vs);
    let mut best = (i64::MAX, 0);
    for h in 1..=2 * d_ff {
        let vs_h = nn::VarStore::new(tch::Device::Cpu);
        let _ = SwiGluFeedForward::new(vs_h.root(), &TransformerConfig { d_ff: h, ..cfg });
        let gap = (transformer_course::layers::parameter_count(&vs_h) - target).abs();
        if gap < best.0 {
            best = (gap, h);
        }
    }
    best.1
