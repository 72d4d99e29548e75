// Wrong solutions of ex12_query_chunks.

// MUTANT: mask_not_cut — passes the whole mask to every block of queries
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let q_block = q.narrow(2, start, n);
        let (out, _) = (attend(&q_block, &k, &v, mask), ());
        blocks.push(out);
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)

// MUTANT: first_rows_of_mask — cuts the mask at rows 0..n for every block
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let m = mask.map(|m| match m.size()[2] {
            1 => m.shallow_clone(),
            _ => m.narrow(2, 0, n),
        });
        let q_block = q.narrow(2, start, n);
        let (out, _) = (attend(&q_block, &k, &v, m.as_ref()), ());
        blocks.push(out);
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)

// MUTANT: keys_chunked_too — each block attends only to its own keys
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let m = mask.map(|m| {
            let rows = if m.size()[2] == 1 { m.shallow_clone() } else { m.narrow(2, start, n) };
            rows.narrow(3, start, n)
        });
        let (kb, vb) = (k.narrow(2, start, n), v.narrow(2, start, n));
        let q_block = q.narrow(2, start, n);
        let (out, _) = (attend(&q_block, &kb, &vb, m.as_ref()), ());
        blocks.push(out);
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)

// MUTANT: own_scores_scaled_by_d_model — computes the scores itself with √d_model
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let d_model = (mha.h * mha.d_k) as f64;
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let mut scores = q.narrow(2, start, n).matmul(&k.transpose(-2, -1)) / d_model.sqrt();
        if let Some(m) = mask {
            let m = if m.size()[2] == 1 { m.shallow_clone() } else { m.narrow(2, start, n) };
            scores = scores.masked_fill(&m, attention::dtype_min(scores.kind()));
        }
        blocks.push(scores.softmax(-1, None::<Kind>).matmul(&v));
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)

// MUTANT: no_chunking — the whole layer at once: right numbers, all the scores at once
    let _ = (chunk, attend);
    mha.forward(x, x, x, mask, false).0

// MUTANT: one_call — projects and calls the core once with every query
    let _ = chunk;
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    mha.merge(&attend(&q, &k, &v, mask)).apply(&mha.W_o)

// MUTANT: prefix_keys_only — each block sees keys 0..its end: right under a causal mask only
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let end = (start + n).min(l);
        let m = mask.map(|m| {
            let rows = if m.size()[2] == 1 { m.shallow_clone() } else { m.narrow(2, start, n) };
            rows.narrow(3, 0, end)
        });
        let (kb, vb) = (k.narrow(2, 0, end), v.narrow(2, 0, end));
        blocks.push(attend(&q.narrow(2, start, n), &kb, &vb, m.as_ref()));
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)

// MUTANT: reprojects_per_block — projects K and V again for every block of queries
    let q = mha.project(x, &mha.W_q);
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let m = mask.map(|m| match m.size()[2] {
            1 => m.shallow_clone(),
            _ => m.narrow(2, start, n),
        });
        let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
        blocks.push(attend(&q.narrow(2, start, n), &k, &v, m.as_ref()));
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)

// MUTANT: keyed_on_batch — cuts the mask when its batch dimension is 1: right for a causal [1, 1, L, L] and a padding [B, 1, 1, L] mask, wrong for a target mask [B, 1, L, L]
    let q = mha.project(x, &mha.W_q);
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let m = mask.map(|m| match m.size()[0] {
            1 => m.narrow(2, start, n), // the causal mask, one for the batch
            _ => m.shallow_clone(),     // a padding mask, one row per example
        });
        blocks.push(attend(&q.narrow(2, start, n), &k, &v, m.as_ref()));
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)
