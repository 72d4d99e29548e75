// Wrong solutions of ex09_unseen_length_score.

// MUTANT: trained_too — draws sequences of the length without skipping the ones trained on
    let _ = trained_on;
    let mut drawn = std::collections::HashSet::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scored = Vec::with_capacity(n);
    while scored.len() < n {
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if drawn.insert(digits.clone()) {
            scored.push(digits);
        }
    }
    let (src, tgt): (Vec<_>, Vec<_>) =
        scored.iter().map(|d| encode_pair(d)).unzip();
    let shape = [n as i64, SEQ_LEN as i64];
    let src = Tensor::from_slice(&src.concat()).view(shape);
    let tgt = Tensor::from_slice(&tgt.concat()).view(shape);
    let right = correct_rows(model, &src, &tgt, 500)
        .into_iter()
        .filter(|&r| r)
        .count();
    LengthScore { len, scored, right }

// MUTANT: repeats — skips what was trained on but may draw one sequence twice
    let skip = digit_sequences(trained_on);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scored = Vec::with_capacity(n);
    while scored.len() < n {
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if !skip.contains(&digits) {
            scored.push(digits);
        }
    }
    let (src, tgt): (Vec<_>, Vec<_>) =
        scored.iter().map(|d| encode_pair(d)).unzip();
    let shape = [n as i64, SEQ_LEN as i64];
    let src = Tensor::from_slice(&src.concat()).view(shape);
    let tgt = Tensor::from_slice(&tgt.concat()).view(shape);
    let right = correct_rows(model, &src, &tgt, 500)
        .into_iter()
        .filter(|&r| r)
        .count();
    LengthScore { len, scored, right }

// MUTANT: digits_only — counts a row right when its digits are, whether or not EOS follows them
    let mut skip = digit_sequences(trained_on);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scored = Vec::with_capacity(n);
    while scored.len() < n {
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if skip.insert(digits.clone()) {
            scored.push(digits);
        }
    }
    let right = scored
        .iter()
        .filter(|d| {
            let got = transformer_course::generate::reverse_digits(model, d);
            let want: Vec<i64> = d.iter().rev().copied().collect();
            got.len() >= len && got[..len] == want[..]
        })
        .count();
    LengthScore { len, scored, right }

// MUTANT: seed_ignored — draws from a fixed seed, so every call scores the same sequences
    let _ = seed;
    let mut skip = digit_sequences(trained_on);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut scored = Vec::with_capacity(n);
    while scored.len() < n {
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if skip.insert(digits.clone()) {
            scored.push(digits);
        }
    }
    let (src, tgt): (Vec<_>, Vec<_>) =
        scored.iter().map(|d| encode_pair(d)).unzip();
    let shape = [n as i64, SEQ_LEN as i64];
    let src = Tensor::from_slice(&src.concat()).view(shape);
    let tgt = Tensor::from_slice(&tgt.concat()).view(shape);
    let right = correct_rows(model, &src, &tgt, 500)
        .into_iter()
        .filter(|&r| r)
        .count();
    LengthScore { len, scored, right }

// MUTANT: held_out_scored_in_train_mode — its own greedy loop, with the model in training mode (`train = true`): dropout stays on
    let mut skip = digit_sequences(trained_on);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scored = Vec::with_capacity(n);
    while scored.len() < n {
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if skip.insert(digits.clone()) {
            scored.push(digits);
        }
    }
    let right = scored
        .iter()
        .filter(|d| {
            let (s, t) = encode_pair(d);
            let src = Tensor::from_slice(&s).view([1, SEQ_LEN as i64]);
            let (memory, mask) = model.encode(&src, true);
            let mut out = Tensor::from_slice(&[transformer_course::vocab::BOS_ID]).view([1, 1]);
            for _ in 0..SEQ_LEN - 1 {
                let next = model.decode(&out, &memory, &mask, true).select(1, -1).argmax(-1, false);
                out = Tensor::cat(&[out, next.unsqueeze(1)], 1);
                if next.int64_value(&[0]) == transformer_course::vocab::EOS_ID {
                    break;
                }
            }
            let pred = Vec::<i64>::try_from(out.view([-1])).unwrap();
            transformer_course::generate::row_is_right(&pred, &t)
        })
        .count();
    LengthScore { len, scored, right }
