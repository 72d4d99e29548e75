//! Chapter 12 exercises: `cargo test --test exercises_ch12`.
mod common;

use common::{assert_close, assert_unchanged, build, config, seeded};
use std::cell::RefCell;

use exercises::ch12_sdpa_bench::{
    attention_in_query_chunks, max_len_for_budget, online_softmax_attention,
    plain_core, KvBlocks,
};
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::sdpa::score_matrix_bytes;
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask,
};

fn bytes_of(t: &Tensor) -> u64 {
    t.numel() as u64 * t.kind().elt_size_in_bytes() as u64
}

#[rstest]
#[case::one_score_matrix_f32(1, 2, 3, Kind::Float)]
#[case::scores_and_weights_bf16(2, 8, 8, Kind::BFloat16)]
#[case::three_copies_f64(3, 1, 1, Kind::Double)]
fn ex12_max_len_is_the_largest_that_fits(
    #[case] copies: u64,
    #[case] b: i64,
    #[case] h: i64,
    #[case] kind: Kind,
) {
    let cost = |l: i64| copies * score_matrix_bytes(b, h, l, kind);
    for budget in [
        0u64,
        1,
        1000,
        123_456_789,
        16 << 30,
        80 << 30,
        cost(100),
        cost(100) - 1,
        cost(4096),
        cost(4096) + 1,
    ] {
        let l = max_len_for_budget(budget, b, h, kind, copies);
        assert!(
            l >= 0,
            "a length is never negative, got {l} for budget {budget}"
        );
        assert!(
            l == 0 || cost(l) <= budget,
            "L = {l} needs {} bytes ({copies} copies of [{b}, {h}, L, L] {kind:?}), more than the \
             budget of {budget}",
            cost(l)
        );
        assert!(cost(l + 1) > budget, "L = {} would still fit in {budget} bytes: the answer is the largest", l + 1);
    }
}

#[test]
fn ex12_max_len_is_exact_where_floats_are_not() {
    // Budgets near 2⁶⁴ bytes of one-byte elements: an f64 holds them only to ±1024, and a
    // plain floating-point square root comes out one too high or one too low.
    let k: u64 = (1 << 32) - 1;
    let why = "near 2⁶⁴ a float square root is off by one: correct it with exact integer checks (u128)";
    assert_eq!(
        max_len_for_budget(k * k, 1, 1, Kind::Uint8, 1),
        k as i64,
        "budget (2³² − 1)²: {why}"
    );
    assert_eq!(
        max_len_for_budget(k * k - 1, 1, 1, Kind::Uint8, 1),
        k as i64 - 1,
        "budget (2³² − 1)² − 1: {why}"
    );
    assert_eq!(
        max_len_for_budget(u64::MAX, 1, 1, Kind::Uint8, 1),
        k as i64,
        "budget u64::MAX: {why}"
    );
    let m: u64 = 1_991_887_577;
    assert_eq!(
        max_len_for_budget(3 * m * m, 1, 3, Kind::Uint8, 1),
        m as i64,
        "budget 3·m²: {why}"
    );
}

#[test]
fn ex12_max_len_against_real_tensors() {
    // Score tensors of the length it returns really fit, one longer really do not.
    let budget = 50_000u64;
    let l = max_len_for_budget(budget, 2, 3, Kind::Float, 2);
    let scores = |l: i64| {
        let q = Tensor::zeros([2, 3, l, 4], (Kind::Float, Device::Cpu));
        q.matmul(&q.transpose(-2, -1))
    };
    assert!(
        2 * bytes_of(&scores(l)) <= budget,
        "two real [2, 3, {l}, {l}] f32 score tensors exceed {budget} bytes"
    );
    assert!(
        2 * bytes_of(&scores(l + 1)) > budget,
        "L = {} would still fit",
        l + 1
    );
    // Chapter 12's B = 8, h = 8 in bf16: L = 1024 costs 256 MiB for two copies.
    assert_eq!(
        max_len_for_budget(256 << 20, 8, 8, Kind::BFloat16, 2),
        1024,
        "256 MiB, B = h = 8, bf16, 2 copies"
    );
}

fn mha(seed: i64) -> (nn::VarStore, MultiHeadAttention) {
    build(seed, |p| {
        MultiHeadAttention::new(p, &config(32, 4, 64)).unwrap()
    })
}

/// A mask's query dimension is 1 or that of the block: one of L that was not cut
/// would fail in the core with a bare shape error.
fn mask_is_cut(chunk: i64, q: &Tensor, mask: Option<&Tensor>) {
    let Some(mq) = mask.map(|m| m.size()[2]) else {
        return;
    };
    let rows = q.size()[2];
    assert!(
        mq == 1 || mq == rows,
        "chunk {chunk}: a block of {rows} queries got a mask with a query dimension of \
         {mq} (mask {:?}): a mask with a query dimension of L is cut like the queries, \
         whatever its batch dimension (a target mask is [B, 1, L, L], a causal one \
         [1, 1, L, L])",
        mask.map(Tensor::size)
    );
}

/// Runs the exercise with an attention core that records (query rows, key rows) of
/// every call, and checks the calls: every query row exactly once, at most `chunk`
/// of them per call, each against all L keys.
fn chunked_and_checked(
    m: &MultiHeadAttention,
    x: &Tensor,
    mask: Option<&Tensor>,
    chunk: i64,
) -> Tensor {
    let l = x.size()[1];
    let calls = RefCell::new(Vec::<(i64, i64)>::new());
    // Where each call's K and V live: the same tensors for every block, if they were
    // projected once.
    let kv_at = RefCell::new(Vec::<(usize, usize)>::new());
    let recording =
        |q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>| {
            calls.borrow_mut().push((q.size()[2], k.size()[2]));
            mask_is_cut(chunk, q, mask);
            kv_at
                .borrow_mut()
                .push((k.data_ptr() as usize, v.data_ptr() as usize));
            plain_core(q, k, v, mask)
        };
    let got = attention_in_query_chunks(m, x, mask, chunk, &recording);
    let calls = calls.into_inner();
    let kv_at = kv_at.into_inner();
    let distinct = kv_at.iter().filter(|&&at| at != kv_at[0]).count();
    assert!(
        distinct == 0,
        "{}",
        common::shortcut_message(
            &format!(
                "chunk {chunk}: `attend` got new K and V tensors in {distinct} of its {} \
                 calls: the keys and values were projected again (or copied) for every \
                 block of queries",
                kv_at.len()
            ),
            "only the queries are cut; project K and V once, before the loop, and give \
             every block the same ones"
        )
    );
    assert!(
        !calls.is_empty(),
        "chunk {chunk}: `attend` was never called. The scores of each block of queries are \
         what must stay small, so every block goes through the attention core you are given"
    );
    for &(rows, keys) in &calls {
        assert!(
            rows <= chunk,
            "{}",
            common::shortcut_message(
                &format!(
                    "chunk {chunk}: one call to `attend` held {rows} query rows (calls: \
                     (queries, keys) = {calls:?})"
                ),
                "scores exist for at most `chunk` queries at once: cut the queries into \
                 blocks of `chunk` rows"
            )
        );
        assert!(
            keys == l,
            "chunk {chunk}: a block of queries attended to {keys} keys, not all {l}. Only the \
             queries are cut: each query's softmax runs over every key (calls: {calls:?})"
        );
    }
    let rows: i64 = calls.iter().map(|c| c.0).sum();
    assert!(
        rows == l,
        "chunk {chunk}: the calls to `attend` hold {rows} query rows in all, but L = {l}: every \
         query exactly once, and the last block may be shorter (calls: {calls:?})"
    );
    got
}

#[rstest]
fn ex12_query_chunks_equal_the_whole(
    #[values(1, 3, 4, 7, 10, 15)] chunk: i64,
    #[values("none", "causal", "padding", "target")] mask: &str,
) {
    let (_vs, m) = mha(chunk);
    let x = common::randn(chunk + 100, &[2, 10, 32]);
    let x_before = x.copy();
    let ids = common::ids(&[
        &[3, 4, 5, 6, 7, 8, 2, 0, 0, 0],
        &[3, 4, 2, 0, 0, 0, 0, 0, 0, 0],
    ]);
    let mask = match mask {
        "causal" => Some(make_causal_mask(10, Device::Cpu)),
        "padding" => Some(make_padding_mask(&ids)),
        // Causal and padding in one, [B, 1, L, L]: a query dimension of L with a batch
        // dimension of B, so a rule that reads the batch dimension to decide whether
        // to cut the mask (right for the two above) shows.
        "target" => Some(make_target_mask(&ids)),
        _ => None,
    };
    let (expected, _) = m.forward(&x, &x, &x, mask.as_ref(), false);
    let got = chunked_and_checked(&m, &x, mask.as_ref(), chunk);
    assert_unchanged(&x_before, &x, "x");
    assert_close(
        &got,
        &expected,
        1e-5,
        &format!(
            "chunk {chunk}: differs from the whole layer. Each block of queries attends to \
             all keys; a mask with a query dimension of L is cut like the queries (one of \
             size 1 is not); the last block may be shorter"
        ),
    );
}

/// softmax(q·kᵀ/√d)·v, the plain way (libtorch's softmax subtracts the max itself).
fn reference(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let d = *q.size().last().unwrap() as f64;
    (q.matmul(&k.transpose(-2, -1)) / d.sqrt())
        .softmax(-1, q.kind())
        .matmul(v)
}

/// Runs the exercise on `KvBlocks` of k and v and checks the result against the plain
/// softmax. A solution that collects the blocks and only then computes sees every
/// block overwritten by the last one: that case gets its own message.
fn check_online(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    block: i64,
    tol: f64,
    why: &str,
) {
    let (k_before, v_before) = (k.copy(), v.copy());
    let mut blocks = KvBlocks::new(k, v, block);
    let got = online_softmax_attention(q, &mut blocks);
    assert_unchanged(&k_before, k, "k");
    assert_unchanged(&v_before, v, "v");
    assert!(
        blocks.keys_left() == 0,
        "block {block}: {} keys never taken from the source: the softmax runs over all of them",
        blocks.keys_left()
    );
    let want = reference(q, k, v);
    if common::max_abs_diff(&got, &want) > tol {
        // What keeping the blocks and concatenating them afterwards gives.
        let kept: Vec<(Tensor, Tensor)> = KvBlocks::new(k, v, block).collect();
        let (ks, vs): (Vec<Tensor>, Vec<Tensor>) = kept.into_iter().unzip();
        let stale = reference(q, &Tensor::cat(&ks, -2), &Tensor::cat(&vs, -2));
        assert!(
            got.size() != stale.size() || common::max_abs_diff(&got, &stale) > tol,
            "{}",
            common::shortcut_message(
                &format!(
                    "block {block}: the blocks were kept and used only after the last one \
                     had arrived, by then each of them overwritten by it"
                ),
                "all the keys never exist at once, nor all the scores: fold each block into \
                 the running maximum, denominator and value sum as it arrives"
            )
        );
    }
    assert_close(&got, &want, tol, why);
}

#[rstest]
fn ex12_online_softmax_equals_softmax(#[values(1, 4, 5, 16, 40)] block: i64) {
    let (q, k, v) = seeded(block, || {
        let opts = (Kind::Double, Device::Cpu);
        (
            Tensor::randn([2, 3, 6, 8], opts),
            Tensor::randn([2, 3, 16, 8], opts),
            Tensor::randn([2, 3, 16, 5], opts),
        )
    });
    check_online(
        &q,
        &k,
        &v,
        block,
        1e-10,
        &format!(
            "block {block}: not softmax(q·kᵀ/√d_k)·v. When the running maximum grows from m \
             to m', rescale both running sums by exp(m − m'); the last block may be shorter"
        ),
    );
}

#[rstest]
fn ex12_online_softmax_survives_huge_scores(#[values(3, 8)] block: i64) {
    // Scores in the thousands: exp overflows to inf in fp32 unless the running max is subtracted.
    let (q, k, v) = seeded(1, || {
        let opts = (Kind::Float, Device::Cpu);
        (
            Tensor::randn([4, 8], opts) * 60.0,
            Tensor::randn([11, 8], opts) * 60.0,
            Tensor::randn([11, 3], opts),
        )
    });
    check_online(
        &q,
        &k,
        &v,
        block,
        1e-4,
        "scores in the thousands: exp(s) overflows unless every exponent is s − (running \
         maximum) ≤ 0",
    );
}

#[rstest]
fn ex12_online_softmax_all_scores_negative(#[values(2, 5)] block: i64) {
    // Every score near −1100: a running maximum that starts at 0 instead of −∞ never
    // moves, every exp(s − 0) underflows to 0, and the answer is 0/0.
    let (q, k, v) = seeded(2, || {
        let opts = (Kind::Float, Device::Cpu);
        (
            Tensor::randn([4, 8], opts) + 20.0,
            Tensor::randn([9, 8], opts) - 20.0,
            Tensor::randn([9, 3], opts),
        )
    });
    check_online(
        &q,
        &k,
        &v,
        block,
        1e-4,
        "every score far below 0: the running maximum must start at −∞ (or at the first \
         block's maximum), not at 0, or every exp underflows and ℓ stays 0",
    );
}

/// The process's resident memory in bytes (pages of 4 KiB; larger pages only make
/// the test more lenient).
#[cfg(target_os = "linux")]
fn resident_bytes() -> i64 {
    let statm =
        std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages in /proc/self/statm");
    pages * 4096
}

/// Copies of the blocks, kept to be concatenated at the end, give the right numbers:
/// only the memory held while the blocks arrive shows them. The source measures the
/// process's resident memory each time a block is asked for; 32 blocks of 256 KiB
/// keys and 256 KiB values make 16 MiB in all, far above what the other tests move.
#[cfg(target_os = "linux")]
#[test]
fn ex12_online_softmax_holds_one_block_at_a_time() {
    use std::rc::Rc;
    let (q, k, v) = seeded(3, || {
        let opts = (Kind::Double, Device::Cpu);
        (
            Tensor::randn([4, 64], opts),
            Tensor::randn([32 * 512, 64], opts),
            Tensor::randn([32 * 512, 64], opts),
        )
    });
    let all = (bytes_of(&k) + bytes_of(&v)) as i64;
    let seen = Rc::new(RefCell::new(Vec::<i64>::new()));
    let record = Rc::clone(&seen);
    let mut blocks = KvBlocks::new(&k, &v, 512)
        .with_probe(move || record.borrow_mut().push(resident_bytes()));
    let got = online_softmax_attention(&q, &mut blocks);
    let seen = seen.borrow();
    let first = *seen.first().expect("the source was asked for a block");
    let grew = seen.iter().max().expect("one value") - first;
    assert!(
        grew < all / 2,
        "{}",
        common::shortcut_message(
            &format!(
                "by the last block the process held {} KiB more than when the first was \
                 asked for, {:.0}% of all the keys and values ({} KiB): copies of the \
                 blocks were kept",
                grew / 1024,
                100.0 * grew as f64 / all as f64,
                all / 1024
            ),
            "the online softmax holds one block at a time: fold each block into m, ℓ and \
             the value sum, then let it go"
        )
    );
    assert_close(
        &got,
        &reference(&q, &k, &v),
        1e-10,
        "not softmax(q·kᵀ/√d_k)·v",
    );
}
