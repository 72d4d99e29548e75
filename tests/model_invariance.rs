//! Chapter 07's two properties, over several positions, lengths and seeds, plus the
//! mutation check: the causality test must catch the two classic broken causal masks.
use rstest::rstest;
use tch::{nn, Tensor};
use transformer_course::mask_checks::{
    causal_mask_diagonal_0, causal_mask_without_triu, causality_check,
    source_padding_check, target_padding_check,
};
use transformer_course::transformer::{
    make_causal_mask, CausalMaskFn, Transformer,
};

mod common;

const ATOL: f64 = 1e-5;

/// A small model (so the suite stays fast) with dropout off: two passes must agree.
fn model(seed: i64) -> (nn::VarStore, Transformer) {
    common::tiny_model(seed)
}

fn batch() -> (Tensor, Tensor) {
    let src = Tensor::from_slice(&[
        3i64, 4, 5, 6, 7, 2, 0, 0, 9, 10, 11, 2, 0, 0, 0, 0,
    ])
    .view([2, 8]);
    let tgt =
        Tensor::from_slice(&[1i64, 7, 6, 5, 4, 3, 2, 1, 11, 10, 9, 2, 0, 0])
            .view([2, 7]);
    (src, tgt)
}

#[rstest]
fn causality_holds(
    #[values(1, 2, 3, 5, 6)] k: i64,
    #[values(0, 1, 7)] seed: i64,
) {
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    let r = causality_check(&m, &src, &tgt, k, 12, make_causal_mask);
    assert!(
        r.before_k <= ATOL,
        "positions before k={k} changed by {:e}",
        r.before_k
    );
    assert!(r.from_k > 1e-3, "positions from k={k} on did not change ({:e}): the test would prove nothing", r.from_k);
}

#[rstest]
#[case::diagonal_0(causal_mask_diagonal_0)]
#[case::without_triu(causal_mask_without_triu)]
fn causality_test_catches_broken_masks(
    #[case] broken: CausalMaskFn,
    #[values(0, 3)] seed: i64,
) {
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    // k=1: the diagonal-0 mutation leaves position 0 with no visible key at all, so it
    // spreads over every key including the future ones.
    let r = causality_check(&m, &src, &tgt, 1, 12, broken);
    assert!(
        !r.holds(ATOL),
        "a broken causal mask slipped through: {r:?}"
    );
}

#[rstest]
fn source_padding_changes_nothing(
    #[values(1, 2, 6)] extra: i64,
    #[values(0, 5)] seed: i64,
) {
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    let d = source_padding_check(&m, &src, &tgt, extra);
    assert!(
        d <= ATOL,
        "appending {extra} PAD to the source moved the logits by {d:e}"
    );
}

#[rstest]
fn target_padding_changes_nothing(
    #[values(1, 4)] extra: i64,
    #[values(0, 5)] seed: i64,
) {
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    let d = target_padding_check(&m, &src, &tgt, extra);
    assert!(
        d <= ATOL,
        "appending {extra} PAD to the target moved the real positions by {d:e}"
    );
}

#[rstest]
fn padding_inside_a_batch_matches_the_unpadded_row(#[values(0, 2)] seed: i64) {
    // Row 1 of the batch is row 1 alone, cut to its real length, padded by its neighbour.
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    let batched = tch::no_grad(|| m.forward(&src, &tgt, false))
        .get(1)
        .narrow(0, 0, 4);
    let alone = tch::no_grad(|| {
        m.forward(
            &src.get(1).narrow(0, 0, 4).unsqueeze(0),
            &tgt.get(1).narrow(0, 0, 4).unsqueeze(0),
            false,
        )
    })
    .get(0);
    let d = (batched - alone).abs().max().double_value(&[]);
    assert!(
        d <= ATOL,
        "row 1 differs from itself without padding by {d:e}"
    );
}
