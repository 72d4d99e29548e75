// Wrong solutions of ex02_head_ablation.

// MUTANT: zero_w_o_in_place — zeroes the head's columns of W_o in the layer itself
    tch::no_grad(|| {
        let _ = mha.W_o.ws.narrow(1, head * mha.d_k, mha.d_k).fill_(0.0);
    });
    mha.forward(q, k, v, mask, false).0

// MUTANT: wrong_slice — zeroes features head..head+d_k of the merged output, not head·d_k..
    let (qh, kh) = (mha.project(q, &mha.W_q), mha.project(k, &mha.W_k));
    let vh = mha.project(v, &mha.W_v);
    let (heads, _) = attention::scaled_dot_product(&qh, &kh, &vh, mask, 0.0, false);
    let merged = mha.merge(&heads);
    let _ = merged.narrow(2, head, mha.d_k).fill_(0.0);
    merged.apply(&mha.W_o)

// MUTANT: after_w_o — zeroes the head's slice after W_o instead of before
    let out = mha.forward(q, k, v, mask, false).0;
    let _ = out.narrow(2, head * mha.d_k, mha.d_k).fill_(0.0);
    out

// MUTANT: four_heads — builds the keep-mask for the course's 4 heads instead of mha.h
    let (qh, kh) = (mha.project(q, &mha.W_q), mha.project(k, &mha.W_k));
    let vh = mha.project(v, &mha.W_v);
    let (heads, _) = attention::scaled_dot_product(&qh, &kh, &vh, mask, 0.0, false);
    let index = Tensor::arange(4, (Kind::Int64, heads.device()));
    let keep = index.ne(head).to_kind(heads.kind()).view([1, 4, 1, 1]);
    mha.merge(&(heads * keep)).apply(&mha.W_o)
