// Wrong solutions of ex09_cosine.

// MUTANT: t_over_total — t = (step − warmup)/total: never reaches the bottom
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / total as f64;
        min_lr + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos())
    }

// MUTANT: warmup_from_zero — counts steps from 0: lr(s) = peak·(s − 1)/warmup
    if step <= warmup {
        peak * (step - 1) as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        min_lr + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos())
    }

// MUTANT: linear_decay — a straight line down instead of the cosine
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        peak - (peak - min_lr) * t
    }

// MUTANT: decays_to_zero — the cosine ends at 0 instead of min_lr
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        0.5 * peak * (1.0 + (std::f64::consts::PI * t).cos())
    }

// MUTANT: smoothstep — a cubic ease (1 − 3t² + 2t³) instead of the cosine: right at both ends and halfway
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        min_lr + (peak - min_lr) * (1.0 - 3.0 * t * t + 2.0 * t * t * t)
    }

// MUTANT: restarts — after total the cosine goes on and climbs back up
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        min_lr + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos())
    }

// MUTANT: zero_after_total — min_lr at step total, then 0
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step > total {
        0.0
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        min_lr + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos())
    }

