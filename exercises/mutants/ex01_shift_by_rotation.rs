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

// MUTANT: recover_p — reads p off the slowest pair (its angle p·ω stays below π) and writes pe[p + k] from the formula: no rotation
    let d = row.size()[0];
    let x = Vec::<f64>::try_from(row.to_kind(Kind::Double)).unwrap();
    let slowest = 10000f64.powf(-((d - 2) as f64) / d as f64);
    let p = (x[d as usize - 2].atan2(x[d as usize - 1]) / slowest).round();
    let values: Vec<f32> = (0..d / 2)
        .flat_map(|i| {
            let angle = (p + k as f64) / 10000f64.powf(2.0 * i as f64 / d as f64);
            [angle.sin() as f32, angle.cos() as f32]
        })
        .collect();
    Tensor::from_slice(&values).to_kind(row.kind())

// MUTANT: halves — the row read as all its sines, then all its cosines: the pairs are interleaved
    let d = row.size()[0];
    let halves = row.view([2, d / 2]);
    let (sin_a, cos_a) = (halves.get(0), halves.get(1));
    let opts = (Kind::Double, row.device());
    let rate = -(10000f64.ln()) / d as f64;
    let omega = (Tensor::arange_start_step(0, d, 2, opts) * rate).exp();
    let turn = omega * k as f64;
    let (sin_k, cos_k) = (turn.sin().to_kind(row.kind()), turn.cos().to_kind(row.kind()));
    let sin_ak = &sin_a * &cos_k + &cos_a * &sin_k;
    let cos_ak = cos_a * cos_k - sin_a * sin_k;
    Tensor::cat(&[sin_ak, cos_ak], 0)
