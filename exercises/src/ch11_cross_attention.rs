//! Chapter 11 exercises — reading attention maps as numbers.
//! Check with `cargo test --test exercises_ch11`.
use tch::{Device, Kind, Tensor};

use transformer_course::generate::{correct_rows, sign_test_p_value};
use transformer_course::transformer::{make_causal_mask, Transformer};
use transformer_course::viz::{
    attention_module, every_weight, expected_column, with_head_off,
    AttentionKind,
};
use transformer_course::vocab::PAD_ID;

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

/// ★★★ ex11_find_a_head — measure and test a head that chapter 11 only spots
/// by eye: the *previous-token head*, which makes each position look at the one
/// just before it. Three pieces, which `exercise_experiments find-a-head` puts
/// together on a model it trains.
///
/// First, the score: `weights` are one self-attention layer's weights
/// [B, H, L, L] (queries and keys are the same positions) and `tokens` [B, L]
/// the ids at those positions. A query counts when it is real (not PAD) and has
/// a position before it (position ≥ 1); return, per head, the mean over the
/// counted queries of the batch of the weight the query puts on the key just
/// before it (position i − 1 for query i): 1.0 for a perfect previous-token
/// head.
pub fn previous_token_score(weights: &Tensor, tokens: &Tensor) -> Vec<f64> {
    // ANCHOR: ex11_find_a_head_score
    // HINT: the weights a query i puts on key i − 1 lie one below the diagonal
    // HINT: of each [L, L] map: `diagonal(offset, dim1, dim2)` with the right
    // HINT: offset gives them as [B, H, L − 1], for queries 1 .. L. Which of
    // HINT: those queries are real follows from `tokens` (PAD_ID); average each
    // HINT: head over the real ones only, across the whole batch.
    let below = weights.diagonal(-1, -2, -1).to_kind(Kind::Double); // [B, H, L-1]
    let l = tokens.size()[1];
    let real = tokens
        .narrow(1, 1, l - 1)
        .ne(PAD_ID)
        .to_kind(Kind::Double)
        .to_device(weights.device())
        .unsqueeze(1); // [B, 1, L-1]
    let sum =
        (below * &real).sum_dim_intlist([0, 2].as_slice(), false, Kind::Double);
    let n = real.sum(Kind::Double);
    Vec::<f64>::try_from(&(sum / n).to_device(Device::Cpu))
        .expect("one score per head")
    // ANCHOR_END: ex11_find_a_head_score
}

/// The strongest previous-token head of a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FoundHead {
    /// `AttentionKind::EncoderSelf` or `AttentionKind::DecoderSelf`.
    pub kind: AttentionKind,
    pub layer: usize,
    pub head: i64,
    /// Its `previous_token_score`.
    pub score: f64,
}

/// Second, the finder: score every head of every
/// self-attention layer, the encoder's (over `src`) and the decoder's (over
/// `tgt_in`, teacher forcing), in one inference pass of `model`, and return the
/// head with the highest `previous_token_score` (the first one met, encoder
/// before decoder and lower layers and heads first, if two tie).
pub fn find_previous_token_head(
    model: &Transformer,
    src: &Tensor,
    tgt_in: &Tensor,
) -> FoundHead {
    // ANCHOR: ex11_find_a_head_find
    // HINT: `viz::every_weight` runs the pass and returns the encoder's weights
    // HINT: per layer and the decoder's per layer (`self_attn`, `cross_attn`).
    // HINT: Cross-attention maps decoder positions to source positions: "the
    // HINT: position before" means nothing there. Score each layer with the
    // HINT: tokens of its own queries.
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    let layers = enc_w
        .iter()
        .enumerate()
        .map(|(l, w)| (AttentionKind::EncoderSelf, l, w, src))
        .chain(dec_w.iter().enumerate().map(|(l, w)| {
            (AttentionKind::DecoderSelf, l, &w.self_attn, tgt_in)
        }));
    let mut best: Option<FoundHead> = None;
    for (kind, layer, w, tokens) in layers {
        for (head, score) in
            previous_token_score(w, tokens).into_iter().enumerate()
        {
            if best.is_none_or(|b| score > b.score) {
                best = Some(FoundHead {
                    kind,
                    layer,
                    head: head as i64,
                    score,
                });
            }
        }
    }
    best.expect("a model with at least one self-attention layer")
    // ANCHOR_END: ex11_find_a_head_find
}

/// What switching a head off does, row by row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadCheck {
    /// Rows greedy decoding gets right with the head on, wrong with it off.
    pub only_on: usize,
    /// Rows it gets right only with the head off.
    pub only_off: usize,
    /// Two-sided p of the exact sign test on those flips.
    pub p: f64,
}

/// Third, the causal check: decode the rows
/// `src`/`tgt` (a reversal dataset's tensors) greedily with the head `found`
/// on, then with it switched off, judge each row by exact match, and compare
/// the two runs row by row.
pub fn check_head(
    model: &Transformer,
    found: &FoundHead,
    src: &Tensor,
    tgt: &Tensor,
) -> HeadCheck {
    // ANCHOR: ex11_find_a_head_check
    // HINT: chapter 10's `correct_rows` judges every row; `viz::with_head_off`
    // HINT: runs a closure with one head silenced (`viz::attention_module`
    // HINT: finds the module of a kind and layer). The same rows are scored
    // HINT: twice: they are pairs, and chapter 11 has the test for pairs.
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, found.kind, found.layer);
    let off =
        with_head_off(mha, found.head, || correct_rows(model, src, tgt, 500));
    let only_on = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    HeadCheck {
        only_on,
        only_off,
        p: sign_test_p_value(only_on, only_off),
    }
    // ANCHOR_END: ex11_find_a_head_check
}
