// Wrong solutions of ex12_online_softmax.

// MUTANT: acc_not_rescaled — rescales the denominator but not the value sum
    let d_k = *q.size().last().expect("q has dimensions");
    let lk = k.size()[k.dim() - 2];
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = *v.size().last().expect("v");
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), f64::NEG_INFINITY, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for start in (0..lk).step_by(block as usize) {
        let n = block.min(lk - start);
        let s = q.matmul(&k.narrow(-2, start, n).transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp();
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc + p.matmul(&v.narrow(-2, start, n));
        m = m_new;
    }
    acc / denom

// MUTANT: no_running_max — plain exp(s), summed block by block: overflows
    let d_k = *q.size().last().expect("q has dimensions");
    let lk = k.size()[k.dim() - 2];
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = *v.size().last().expect("v");
    let opts = (q.kind(), q.device());
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for start in (0..lk).step_by(block as usize) {
        let n = block.min(lk - start);
        let s = q.matmul(&k.narrow(-2, start, n).transpose(-2, -1)) / (d_k as f64).sqrt();
        let p = s.exp();
        denom = &denom + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc + p.matmul(&v.narrow(-2, start, n));
    }
    acc / denom

// MUTANT: inverted_rescale — multiplies by exp(m' − m) instead of exp(m − m')
    let d_k = *q.size().last().expect("q has dimensions");
    let lk = k.size()[k.dim() - 2];
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = *v.size().last().expect("v");
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), -1e30, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for start in (0..lk).step_by(block as usize) {
        let n = block.min(lk - start);
        let s = q.matmul(&k.narrow(-2, start, n).transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m_new - &m).exp().clamp_max(1e30);
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v.narrow(-2, start, n));
        m = m_new;
    }
    acc / denom

// MUTANT: last_block_dropped — steps over whole blocks only: a shorter last block is lost
    let d_k = *q.size().last().expect("q has dimensions");
    let lk = k.size()[k.dim() - 2];
    let mut row_shape = q.size();
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().expect("q has dimensions") = *v.size().last().expect("v");
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), f64::NEG_INFINITY, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for start in (0..lk - block + 1).step_by(block as usize) {
        let s = q.matmul(&k.narrow(-2, start, block).transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp();
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v.narrow(-2, start, block));
        m = m_new;
    }
    acc / denom
