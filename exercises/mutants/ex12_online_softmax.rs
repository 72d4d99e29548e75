// Wrong solutions of ex12_online_softmax.

// MUTANT: acc_not_rescaled — rescales the denominator but not the value sum
    let d_k = *q.size().last().expect("q has dimensions");
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = blocks.value_dim();
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), f64::NEG_INFINITY, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for (k_block, v_block) in blocks {
        let s = q.matmul(&k_block.transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp();
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc + p.matmul(&v_block);
        m = m_new;
    }
    acc / denom

// MUTANT: no_running_max — plain exp(s), summed block by block: overflows
    let d_k = *q.size().last().expect("q has dimensions");
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = blocks.value_dim();
    let opts = (q.kind(), q.device());
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for (k_block, v_block) in blocks {
        let s = q.matmul(&k_block.transpose(-2, -1)) / (d_k as f64).sqrt();
        let p = s.exp();
        denom = &denom + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc + p.matmul(&v_block);
    }
    acc / denom

// MUTANT: inverted_rescale — multiplies by exp(m' − m) instead of exp(m − m')
    let d_k = *q.size().last().expect("q has dimensions");
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = blocks.value_dim();
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), -1e30, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for (k_block, v_block) in blocks {
        let s = q.matmul(&k_block.transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m_new - &m).exp().clamp_max(1e30);
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v_block);
        m = m_new;
    }
    acc / denom

// MUTANT: first_block_only_max — takes the maximum of the first block and never updates it
    let d_k = *q.size().last().expect("q has dimensions");
    let mut m: Option<Tensor> = None;
    let mut denom: Option<Tensor> = None;
    let mut acc: Option<Tensor> = None;
    for (k_block, v_block) in blocks {
        let s = q.matmul(&k_block.transpose(-2, -1)) / (d_k as f64).sqrt();
        let m0 = m.get_or_insert_with(|| s.amax(-1, true));
        let p = (&s - &*m0).exp();
        let sum = p.sum_dim_intlist(-1, true, p.kind());
        let pv = p.matmul(&v_block);
        denom = Some(denom.map_or(sum.shallow_clone(), |d| d + &sum));
        acc = Some(acc.map_or(pv.shallow_clone(), |a| a + &pv));
    }
    acc.expect("a block") / denom.expect("a block")

// MUTANT: plain_softmax — collects the blocks and runs the plain softmax over all keys
    let d_k = *q.size().last().expect("q has dimensions");
    let (ks, vs): (Vec<Tensor>, Vec<Tensor>) = blocks.unzip();
    let (k, v) = (Tensor::cat(&ks, -2), Tensor::cat(&vs, -2));
    (q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt())
        .softmax(-1, q.kind())
        .matmul(&v)

// MUTANT: full_matrix_then_blocks — all the scores first, then the online update over their columns
    let d_k = *q.size().last().expect("q has dimensions");
    let (ks, vs): (Vec<Tensor>, Vec<Tensor>) = blocks.unzip();
    let sizes: Vec<i64> = ks.iter().map(|k| k.size()[k.dim() - 2]).collect();
    let (k, v) = (Tensor::cat(&ks, -2), Tensor::cat(&vs, -2));
    let scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt(); // [.., Lq, Lk]
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = *v.size().last().expect("v");
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), f64::NEG_INFINITY, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    let mut start = 0;
    for n in sizes {
        let s = scores.narrow(-1, start, n);
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp();
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v.narrow(-2, start, n));
        m = m_new;
        start += n;
    }
    acc / denom

// MUTANT: copies_then_softmax — deep-copies every block, concatenates them and runs one plain softmax
    let d_k = *q.size().last().expect("q has dimensions");
    let (ks, vs): (Vec<Tensor>, Vec<Tensor>) =
        blocks.map(|(k, v)| (k.copy(), v.copy())).unzip();
    let (k, v) = (Tensor::cat(&ks, -2), Tensor::cat(&vs, -2));
    (q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt())
        .softmax(-1, q.kind())
        .matmul(&v)

// MUTANT: max_starts_at_zero — the running maximum starts at 0: all-negative rows underflow to 0/0
    let d_k = *q.size().last().expect("q has dimensions");
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = blocks.value_dim();
    let opts = (q.kind(), q.device());
    let mut m = Tensor::zeros(row_shape.as_slice(), opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for (k_block, v_block) in blocks {
        let s = q.matmul(&k_block.transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp();
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v_block);
        m = m_new;
    }
    acc / denom
