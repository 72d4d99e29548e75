// Wrong solutions of ex09_smoothing_floor.

// MUTANT: label_gets_one_minus_eps — forgets the label's own share ε/V
    let plogp = |p: f64| if p > 0.0 { p * p.ln() } else { 0.0 };
    let (on, off) = (1.0 - eps, eps / v as f64);
    -(plogp(on) + (v - 1) as f64 * plogp(off))

// MUTANT: log2 — the entropy in bits instead of nats
    let plogp = |p: f64| if p > 0.0 { p * p.log2() } else { 0.0 };
    let (on, off) = (1.0 - eps + eps / v as f64, eps / v as f64);
    -(plogp(on) + (v - 1) as f64 * plogp(off))

// MUTANT: nan_at_zero — p·ln p without the p = 0 case: NaN for ε = 0
    let (on, off) = (1.0 - eps + eps / v as f64, eps / v as f64);
    -(on * on.ln() + (v - 1) as f64 * off * off.ln())

// MUTANT: course_vocab — V fixed at the course's 13 tokens: right for this model only
    let v = 13;
    let plogp = |p: f64| if p > 0.0 { p * p.ln() } else { 0.0 };
    let (on, off) = (1.0 - eps + eps / v as f64, eps / v as f64);
    -(plogp(on) + (v - 1) as f64 * plogp(off))

// MUTANT: v_others — counts V other classes instead of V − 1
    let plogp = |p: f64| if p > 0.0 { p * p.ln() } else { 0.0 };
    let (on, off) = (1.0 - eps + eps / v as f64, eps / v as f64);
    -(plogp(on) + v as f64 * plogp(off))

// MUTANT: others_get_eps_over_v_minus_1 — the other smoothing convention: ε/(V − 1) on each other class
    let plogp = |p: f64| if p > 0.0 { p * p.ln() } else { 0.0 };
    let (on, off) = (1.0 - eps, eps / (v - 1) as f64);
    -(plogp(on) + (v - 1) as f64 * plogp(off))
