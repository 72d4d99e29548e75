//! Chapter 12 exercises — where the hand-written attention spends its memory,
//! and how the fused kernels avoid it. Check with `cargo test --test
//! exercises_ch12`.
use tch::{Kind, Tensor};

use transformer_course::attention::{self, MultiHeadAttention};

/// ★★ ex12_max_len — `sdpa::score_matrix_bytes` the other way round: the longest
/// sequence L for which `copies` score matrices [B, h, L, L] of `kind` fit in
/// `budget` bytes (the hand-written path holds at least two at once: the scores
/// and the softmax output). 0 if not even L = 1 fits.
pub fn max_len_for_budget(
    budget: u64,
    b: i64,
    h: i64,
    kind: Kind,
    copies: u64,
) -> i64 {
    // ANCHOR: ex12_max_len
    // HINT: copies·B·h·L²·bytes ≤ budget gives
    // HINT: L ≤ √(budget / (copies·B·h·bytes)). In f64 that can land one off
    // HINT: for large budgets, so nudge the result up or down with exact
    // HINT: integer checks (in u128: L² overflows u64).
    let bytes = kind.elt_size_in_bytes() as u128;
    // Bytes per unit of L².
    let per_square = copies as u128 * (b * h) as u128 * bytes;
    let fits =
        |l: i64| (l as u128) * (l as u128) * per_square <= budget as u128;
    let mut l = (budget as f64 / per_square as f64).sqrt() as i64;
    while fits(l + 1) {
        l += 1;
    }
    while l > 0 && !fits(l) {
        l -= 1;
    }
    l
    // ANCHOR_END: ex12_max_len
}

/// The attention core as ex12_query_chunks receives it: `attend(q, k, v, mask)`
/// on projected, split tensors ([B, h, Lq, d_k], [B, h, Lk, d_k] twice, a mask
/// in the course's convention) returns softmax(q·kᵀ/√d_k)·v, [B, h, Lq, d_k],
/// in inference mode. `attention::scaled_dot_product` is one; the tests pass one
/// that also records the rows of every call.
pub type AttentionCore<'a> =
    &'a dyn Fn(&Tensor, &Tensor, &Tensor, Option<&Tensor>) -> Tensor;

/// `attention::scaled_dot_product` (output only, no dropout) as an
/// `AttentionCore`.
pub fn plain_core(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
) -> Tensor {
    attention::scaled_dot_product(q, k, v, mask, 0.0, false).0
}

/// ★★ ex12_query_chunks — the first memory saving: process the queries `chunk`
/// rows at a time, so that scores exist for at most `chunk` queries at once
/// ([B, h, chunk, Lk] instead of [B, h, Lq, Lk]); each query's softmax only
/// needs its own row. Self-attention of `x` ([B, L, d]) with `mha`'s weights,
/// inference mode; `mask` is 4-D with the course's convention and a query
/// dimension of either 1 or L. Every block of queries goes through `attend`,
/// the attention core, which makes the scores. Must equal `mha.forward(x, x,
/// x, mask, false).0`.
pub fn attention_in_query_chunks(
    mha: &MultiHeadAttention,
    x: &Tensor,
    mask: Option<&Tensor>,
    chunk: i64,
    attend: AttentionCore,
) -> Tensor {
    // ANCHOR: ex12_query_chunks
    // HINT: project once, as MultiHeadAttention::forward does. Then walk over
    // HINT: the queries in blocks of `chunk` along their length, each block
    // HINT: against all keys, through `attend`. A mask must be cut like the
    // HINT: queries where it has a query dimension of L. Put the blocks back in
    // HINT: order before the heads are merged.
    let q = mha.project(x, &mha.W_q); // [B, h, L, d_k]
    let (k, v) = (mha.project(x, &mha.W_k), mha.project(x, &mha.W_v));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let m = mask.map(|m| match m.size()[2] {
            1 => m.shallow_clone(), // the same for every query
            _ => m.narrow(2, start, n),
        });
        let q_block = q.narrow(2, start, n); // [B, h, n, d_k]
        blocks.push(attend(&q_block, &k, &v, m.as_ref()));
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)
    // ANCHOR_END: ex12_query_chunks
}

/// Given for ex12_online_softmax: keys and values that arrive one block at a
/// time, as from a stream too long to hold. Iterating yields `(k_block,
/// v_block)`, [.., n, d_k] and [.., n, d_v] with n ≤ `block`, in key order.
/// Like a real stream it has a single buffer: each block is overwritten by the
/// next one, so use a block before asking for the next.
pub struct KvBlocks {
    k: Tensor,
    v: Tensor,
    block: i64,
    next_start: i64,
    // The buffer every block is copied into: [.., block, d_k] and [.., block, d_v].
    buf_k: Tensor,
    buf_v: Tensor,
    // Called each time a block is asked for; the tests use it to watch memory.
    probe: Option<Box<dyn FnMut()>>,
}

impl KvBlocks {
    /// The keys [.., Lk, d_k] and values [.., Lk, d_v] of `k` and `v`, `block`
    /// (≥ 1) keys at a time.
    pub fn new(k: &Tensor, v: &Tensor, block: i64) -> KvBlocks {
        assert!(block >= 1, "a block holds at least one key, got {block}");
        let lk = k.size()[k.dim() - 2];
        let rows = block.min(lk).max(1);
        let buf = |t: &Tensor| {
            let mut shape = t.size();
            shape[t.dim() - 2] = rows;
            Tensor::zeros(shape.as_slice(), (t.kind(), t.device()))
        };
        KvBlocks {
            buf_k: buf(k),
            buf_v: buf(v),
            k: k.shallow_clone(),
            v: v.shallow_clone(),
            block,
            next_start: 0,
            probe: None,
        }
    }

    /// The same source, calling `probe` each time a block is asked for, before
    /// it is handed out (the tests measure with it what is still held then).
    pub fn with_probe(mut self, probe: impl FnMut() + 'static) -> KvBlocks {
        self.probe = Some(Box::new(probe));
        self
    }

    /// d_v, the size of one value vector.
    pub fn value_dim(&self) -> i64 {
        *self.v.size().last().expect("v has dimensions")
    }

    /// How many keys have not been handed out yet.
    pub fn keys_left(&self) -> i64 {
        self.k.size()[self.k.dim() - 2] - self.next_start
    }
}

impl Iterator for KvBlocks {
    type Item = (Tensor, Tensor);

    fn next(&mut self) -> Option<(Tensor, Tensor)> {
        if let Some(probe) = self.probe.as_mut() {
            probe();
        }
        let n = self.block.min(self.keys_left());
        if n <= 0 {
            return None;
        }
        let start = self.next_start;
        self.next_start += n;
        let (k, v) = (self.buf_k.narrow(-2, 0, n), self.buf_v.narrow(-2, 0, n));
        tch::no_grad(|| {
            k.shallow_clone().copy_(&self.k.narrow(-2, start, n));
            v.shallow_clone().copy_(&self.v.narrow(-2, start, n));
        });
        Some((k, v))
    }
}

/// ★★★ ex12_online_softmax — the second saving, the heart of FlashAttention:
/// take the keys and values block by block from `blocks`, keeping per query a
/// running maximum m, a running denominator ℓ and a running weighted sum of
/// values, rescaled whenever m grows. Never more than [.., Lq, block] scores
/// exist, yet the result equals softmax(q·kᵀ/√d_k)·v over all the keys exactly
/// (up to rounding), even for huge scores where a plain exp would overflow.
/// q: [.., Lq, d_k]; the blocks hold at least one key; no mask.
pub fn online_softmax_attention(q: &Tensor, blocks: &mut KvBlocks) -> Tensor {
    // ANCHOR: ex12_online_softmax
    // HINT: everything accumulated so far (ℓ and the value sum) is relative to
    // HINT: the current maximum m. When a key block raises the maximum, one
    // HINT: factor per query converts the old sums to the new maximum before
    // HINT: the block's own terms are added, relative to it too: then no
    // HINT: exponent is ever positive. Start from m = −∞ and zero sums, shaped
    // HINT: [.., Lq, 1] and [.., Lq, d_v]; the answer is the value sum / ℓ.
    // HINT: Fold each block in before taking the next: it is gone after that.
    let d_k = *q.size().last().expect("q has dimensions");
    let mut row_shape = q.size(); // [.., Lq, 1]
    *row_shape.last_mut().expect("q has dimensions") = 1;
    let mut out_shape = q.size(); // [.., Lq, d_v]
    *out_shape.last_mut().expect("q has dimensions") = blocks.value_dim();
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), f64::NEG_INFINITY, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for (k_block, v_block) in blocks {
        // [.., Lq, n]
        let s = q.matmul(&k_block.transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp(); // rescales what was summed relative to m
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v_block);
        m = m_new;
    }
    acc / denom
    // ANCHOR_END: ex12_online_softmax
}
