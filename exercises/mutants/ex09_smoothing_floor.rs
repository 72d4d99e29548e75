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
