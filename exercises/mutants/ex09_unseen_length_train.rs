// Wrong solutions of ex09_unseen_length_train.

// MUTANT: all_lengths — chapter 08's data, every length included: the held-out length is trained on
    let _ = (lengths, held_out);
    let (train, val) = transformer_course::train::reverse_data(opts);
    fit(learner, &train, &val, opts, &mut ())?;
    Ok(train)

// MUTANT: filtered_val_only — the held-out length left out of the validation set, not of the training set
    let kept: Vec<usize> = lengths.clone().filter(|&n| n != held_out).collect();
    let draw = |n: usize, seed: u64, kept: &[usize]| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut src, mut tgt) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let len = kept[rng.random_range(0..kept.len())];
            let digits: Vec<i64> =
                (0..len).map(|_| rng.random_range(0..10)).collect();
            let (s, t) = encode_pair(&digits);
            src.extend_from_slice(&s);
            tgt.extend_from_slice(&t);
        }
        let shape = [n as i64, SEQ_LEN as i64];
        ReverseDataset {
            src: Tensor::from_slice(&src).view(shape),
            tgt: Tensor::from_slice(&tgt).view(shape),
        }
    };
    let all: Vec<usize> = lengths.collect();
    let train = draw(opts.n_train, opts.data_seed, &all);
    let val = draw(opts.n_val, opts.data_seed.wrapping_add(1), &kept);
    fit(learner, &train, &val, opts, &mut ())?;
    Ok(train)

// MUTANT: copy_layout — the target is the source again (chapter 08's copy task), not its reversal
    let kept: Vec<usize> = lengths.filter(|&n| n != held_out).collect();
    let draw = |n: usize, seed: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut src, mut tgt) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let len = kept[rng.random_range(0..kept.len())];
            let digits: Vec<i64> =
                (0..len).map(|_| rng.random_range(0..10)).collect();
            let (s, _) = encode_pair(&digits);
            let mut t = [transformer_course::vocab::PAD_ID; SEQ_LEN];
            t[0] = transformer_course::vocab::BOS_ID;
            t[1..=len + 1].copy_from_slice(&s[..=len]);
            src.extend_from_slice(&s);
            tgt.extend_from_slice(&t);
        }
        let shape = [n as i64, SEQ_LEN as i64];
        ReverseDataset {
            src: Tensor::from_slice(&src).view(shape),
            tgt: Tensor::from_slice(&tgt).view(shape),
        }
    };
    let train = draw(opts.n_train, opts.data_seed);
    let val = draw(opts.n_val, opts.data_seed.wrapping_add(1));
    fit(learner, &train, &val, opts, &mut ())?;
    Ok(train)

// MUTANT: off_by_one — the lengths as a half-open range: the last length of `lengths` is never drawn
    let kept: Vec<usize> = (*lengths.start()..*lengths.end())
        .filter(|&n| n != held_out)
        .collect();
    let draw = |n: usize, seed: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut src, mut tgt) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let len = kept[rng.random_range(0..kept.len())];
            let digits: Vec<i64> =
                (0..len).map(|_| rng.random_range(0..10)).collect();
            let (s, t) = encode_pair(&digits);
            src.extend_from_slice(&s);
            tgt.extend_from_slice(&t);
        }
        let shape = [n as i64, SEQ_LEN as i64];
        ReverseDataset {
            src: Tensor::from_slice(&src).view(shape),
            tgt: Tensor::from_slice(&tgt).view(shape),
        }
    };
    let train = draw(opts.n_train, opts.data_seed);
    let val = draw(opts.n_val, opts.data_seed.wrapping_add(1));
    fit(learner, &train, &val, opts, &mut ())?;
    Ok(train)

// MUTANT: no_training — builds the data but never trains: returns the set as if it had
    let kept: Vec<usize> = lengths.filter(|&n| n != held_out).collect();
    let _ = (learner, opts.epochs);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.data_seed);
    let (mut src, mut tgt) = (Vec::new(), Vec::new());
    for _ in 0..opts.n_train {
        let len = kept[rng.random_range(0..kept.len())];
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        let (s, t) = encode_pair(&digits);
        src.extend_from_slice(&s);
        tgt.extend_from_slice(&t);
    }
    let shape = [opts.n_train as i64, SEQ_LEN as i64];
    Ok(ReverseDataset {
        src: Tensor::from_slice(&src).view(shape),
        tgt: Tensor::from_slice(&tgt).view(shape),
    })

// MUTANT: held_out_in_validation — the held-out length left out of the training set only: the validation set is drawn from every length
    let kept: Vec<usize> = lengths.clone().filter(|&n| n != held_out).collect();
    let all: Vec<usize> = lengths.collect();
    let draw = |n: usize, seed: u64, from: &[usize]| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut src, mut tgt) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let len = from[rng.random_range(0..from.len())];
            let digits: Vec<i64> =
                (0..len).map(|_| rng.random_range(0..10)).collect();
            let (s, t) = encode_pair(&digits);
            src.extend_from_slice(&s);
            tgt.extend_from_slice(&t);
        }
        let shape = [n as i64, SEQ_LEN as i64];
        ReverseDataset {
            src: Tensor::from_slice(&src).view(shape),
            tgt: Tensor::from_slice(&tgt).view(shape),
        }
    };
    let train = draw(opts.n_train, opts.data_seed, &kept);
    let val = draw(opts.n_val, opts.data_seed.wrapping_add(1), &all);
    fit(learner, &train, &val, opts, &mut ())?;
    Ok(train)
