// Wrong solutions of ex11_find_a_head_score.

// MUTANT: diagonal — reads the weight a query puts on itself, not on the key before it
    let on = weights.diagonal(0, -2, -1).to_kind(Kind::Double).narrow(2, 1, tokens.size()[1] - 1);
    let l = tokens.size()[1];
    let real = tokens
        .narrow(1, 1, l - 1)
        .ne(PAD_ID)
        .to_kind(Kind::Double)
        .unsqueeze(1);
    let sum = (on * &real).sum_dim_intlist([0, 2].as_slice(), false, Kind::Double);
    let n = real.sum(Kind::Double);
    Vec::<f64>::try_from(&(sum / n).to_device(Device::Cpu)).unwrap()

// MUTANT: padding_queries — averages over every query at positions ≥ 1, PAD included
    let below = weights.diagonal(-1, -2, -1).to_kind(Kind::Double);
    let _ = (tokens, PAD_ID);
    let per_head = below.mean_dim([0, 2].as_slice(), false, Kind::Double);
    Vec::<f64>::try_from(&per_head.to_device(Device::Cpu)).unwrap()

// MUTANT: position_zero — counts position 0 as a query with weight 0 on "the key before"
    let below = weights.diagonal(-1, -2, -1).to_kind(Kind::Double);
    let real_all = tokens.ne(PAD_ID).to_kind(Kind::Double);
    let l = tokens.size()[1];
    let real = real_all.narrow(1, 1, l - 1).unsqueeze(1);
    let sum = (below * &real).sum_dim_intlist([0, 2].as_slice(), false, Kind::Double);
    let n = real_all.sum(Kind::Double);
    Vec::<f64>::try_from(&(sum / n).to_device(Device::Cpu)).unwrap()

// MUTANT: mean_of_means — averages each sequence, then the sequences
    let below = weights.diagonal(-1, -2, -1).to_kind(Kind::Double);
    let l = tokens.size()[1];
    let real = tokens
        .narrow(1, 1, l - 1)
        .ne(PAD_ID)
        .to_kind(Kind::Double)
        .unsqueeze(1);
    let per_seq = (below * &real).sum_dim_intlist(2, false, Kind::Double)
        / real.sum_dim_intlist(2, false, Kind::Double);
    let per_head = per_seq.mean_dim(0, false, Kind::Double);
    Vec::<f64>::try_from(&per_head.to_device(Device::Cpu)).unwrap()

// MUTANT: over_keys — averages each query's weights over the keys instead of reading key i − 1
    let l = tokens.size()[1];
    let real = tokens
        .narrow(1, 1, l - 1)
        .ne(PAD_ID)
        .to_kind(Kind::Double)
        .unsqueeze(1);
    let rows = weights.narrow(2, 1, l - 1).to_kind(Kind::Double).mean_dim(-1, false, Kind::Double);
    let sum = (rows * &real).sum_dim_intlist([0, 2].as_slice(), false, Kind::Double);
    let n = real.sum(Kind::Double);
    Vec::<f64>::try_from(&(sum / n).to_device(Device::Cpu)).unwrap()

// MUTANT: above — the key after the query: diagonal offset +1
    let above = weights.diagonal(1, -2, -1).to_kind(Kind::Double);
    let l = tokens.size()[1];
    let real = tokens
        .narrow(1, 0, l - 1)
        .ne(PAD_ID)
        .to_kind(Kind::Double)
        .unsqueeze(1);
    let sum = (above * &real).sum_dim_intlist([0, 2].as_slice(), false, Kind::Double);
    let n = real.sum(Kind::Double);
    Vec::<f64>::try_from(&(sum / n).to_device(Device::Cpu)).unwrap()

// MUTANT: key_real — counts a query when the key before it is real, not the query itself: the first PAD query of a row counts
    let below = weights.diagonal(-1, -2, -1).to_kind(Kind::Double);
    let l = tokens.size()[1];
    let real = tokens
        .narrow(1, 0, l - 1)
        .ne(PAD_ID)
        .to_kind(Kind::Double)
        .to_device(weights.device())
        .unsqueeze(1);
    let sum = (below * &real).sum_dim_intlist([0, 2].as_slice(), false, Kind::Double);
    let n = real.sum(Kind::Double);
    Vec::<f64>::try_from(&(sum / n).to_device(Device::Cpu)).expect("one score per head")
