// Wrong solutions of ex01_shift_by_rotation.

// MUTANT: sign — sin(a + b) written as sin a·cos b − cos a·sin b: turns by −k
    let d = row.size()[0];
    let pairs = row.view([d / 2, 2]);
    let (sin_a, cos_a) = (pairs.select(1, 0), pairs.select(1, 1));
    let opts = (Kind::Double, row.device());
    let rate = -(10000f64.ln()) / d as f64;
    let omega = (Tensor::arange_start_step(0, d, 2, opts) * rate).exp();
    let turn = omega * k as f64;
    let (sin_k, cos_k) = (turn.sin().to_kind(row.kind()), turn.cos().to_kind(row.kind()));
    let sin_ak = &sin_a * &cos_k - &cos_a * &sin_k;
    let cos_ak = cos_a * cos_k + sin_a * sin_k;
    Tensor::stack(&[sin_ak, cos_ak], 1).view([d])

// MUTANT: frequencies — ω_i = 10000^(−i/d): arange with step 1 instead of 2
    let d = row.size()[0];
    let pairs = row.view([d / 2, 2]);
    let (sin_a, cos_a) = (pairs.select(1, 0), pairs.select(1, 1));
    let opts = (Kind::Double, row.device());
    let rate = -(10000f64.ln()) / d as f64;
    let omega = (Tensor::arange(d / 2, opts) * rate).exp();
    let turn = omega * k as f64;
    let (sin_k, cos_k) = (turn.sin().to_kind(row.kind()), turn.cos().to_kind(row.kind()));
    let sin_ak = &sin_a * &cos_k + &cos_a * &sin_k;
    let cos_ak = cos_a * cos_k - sin_a * sin_k;
    Tensor::stack(&[sin_ak, cos_ak], 1).view([d])

// MUTANT: in_place — rotates the caller's row in place and returns it
    let d = row.size()[0];
    let pairs = row.view([d / 2, 2]);
    let (sin_a, cos_a) = (pairs.select(1, 0), pairs.select(1, 1));
    let opts = (Kind::Double, row.device());
    let rate = -(10000f64.ln()) / d as f64;
    let omega = (Tensor::arange_start_step(0, d, 2, opts) * rate).exp();
    let turn = omega * k as f64;
    let (sin_k, cos_k) = (turn.sin().to_kind(row.kind()), turn.cos().to_kind(row.kind()));
    let sin_ak = &sin_a * &cos_k + &cos_a * &sin_k;
    let cos_ak = &cos_a * &cos_k - &sin_a * &sin_k;
    let mut out = row.shallow_clone();
    out.copy_(&Tensor::stack(&[sin_ak, cos_ak], 1).view([d]));
    out
