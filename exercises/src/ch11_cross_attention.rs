//! Chapter 11 exercises — reading attention maps as numbers.
//! Check with `cargo test --test exercises_ch11`.
use tch::{Kind, Tensor};

use transformer_course::transformer::{make_causal_mask, Transformer};
use transformer_course::viz::expected_column;

/// ★ ex11_cross_map — the map chapter 11 draws: the *last* decoder layer's
/// cross-attention for one example, averaged over heads. src: [1, Ls], tgt_in:
/// [1, Lt] (teacher forcing, inference mode) → [Lt, Ls] fp32; row i is where
/// decoder position i looks in the source.
pub fn cross_attention_map(
    model: &Transformer,
    src: &Tensor,
    tgt_in: &Tensor,
) -> Tensor {
    // ANCHOR: ex11_cross_map
    // HINT: model.encode, then model.decode_with_weights (with the usual causal
    // HINT: mask) returns the logits and every layer's weights; take the last
    // HINT: layer's cross_attn [1, h, Lt, Ls], drop the batch dimension, mean
    // HINT: over the heads.
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let (_, weights) = model.decode_with_weights(
            tgt_in,
            &memory,
            &src_mask,
            make_causal_mask,
            false,
        );
        let last = &weights.last().expect("at least one layer").cross_attn;
        last.get(0).mean_dim(0, false, Kind::Float)
    })
    // ANCHOR_END: ex11_cross_map
}

/// ★ ex11_entropy — how spread out each row of an attention map is: the Shannon
/// entropy −Σⱼ wᵢⱼ ln wᵢⱼ of every row over the last dimension, in nats (0·ln 0
/// counts as 0: masked keys have weight exactly 0). [.., Lk] → [..]. ln(Lk) for
/// a uniform row, 0 for a one-hot row.
pub fn attention_entropy(weights: &Tensor) -> Tensor {
    // ANCHOR: ex11_entropy
    // HINT: w.ln() is −inf where w = 0, and 0·(−inf) is NaN: the term w·ln w
    // HINT: needs its limit 0 there, from an operation made for it or from a
    // HINT: logarithm that never sees 0. Sum over the last dimension, negate.
    -weights
        .xlogy(weights)
        .sum_dim_intlist(-1, false, weights.kind())
    // ANCHOR_END: ex11_entropy
}

/// ★ ex11_anti_diagonal — a number for "the model reads the source backwards".
/// For a reversal example with `n` digits, decoder position i (input BOS, then
/// the reversed digits) should look at source position n − 1 − i for i < n, and
/// position n (the last row, which predicts EOS) at the source's EOS, also at
/// position n (`viz::expected_column`). `map` is [Lt, Ls] with Lt > n and Ls >
/// n; return the mean, over rows 0 ..= n, of the weight each row puts on its
/// expected column: 1.0 for a perfect reversal map.
pub fn anti_diagonal_score(map: &Tensor, n: i64) -> f64 {
    // ANCHOR: ex11_anti_diagonal
    // HINT: one weight per row counts, at the column expected_column names;
    // HINT: rows after n do not count. Collect the columns, pick one entry per
    // HINT: row (a single indexing operation can do it), then average.
    let cols: Vec<i64> = (0..=n)
        .map(|i| expected_column(i as usize, n as usize) as i64)
        .collect();
    let cols = Tensor::from_slice(&cols)
        .to_device(map.device())
        .unsqueeze(1);
    let picked = map.narrow(0, 0, n + 1).gather(1, &cols, false); // [n+1, 1]
    picked.mean(Kind::Double).double_value(&[])
    // ANCHOR_END: ex11_anti_diagonal
}
