//! Chapter 07 exercises: `cargo test --test exercises_ch07`.
mod common;

use common::{assert_close_f64, assert_unchanged, eval_model, EVAL};
use exercises::ch07_mask_tests::{
    max_weight_on_pad, memory_change_per_position,
};
use rstest::rstest;
use tch::{Device, Kind, Tensor};
use transformer_course::mask_checks::causality_check;
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask, Transformer,
};
use transformer_course::vocab::PAD_ID;

/// Two sources without PAD, so that every position is a real token.
fn full_src() -> Tensor {
    common::ids(&[&[3, 4, 5, 6, 7, 8], &[12, 11, 10, 9, 8, 2]])
}

#[rstest]
fn ex07_encoder_lookahead_moves_every_memory_row(
    #[values(1, 3, 5)] k: i64,
    #[values(0, 4)] seed: i64,
) {
    let (_vs, m) = eval_model(seed, 2);
    let src = full_src();
    let original = src.copy();
    let per_position = memory_change_per_position(&m, &src, k, 12);
    assert_unchanged(&original, &src, "src");
    assert_eq!(
        per_position.len(),
        6,
        "one value per source position (reduce over batch and features)"
    );
    // From k on the tokens themselves changed; before k the rows move too: no causal mask.
    for (p, d) in per_position.iter().enumerate() {
        assert!(
            *d > 1e-4,
            "memory row {p} did not move ({d:e}) although the encoder attends both ways: \
             were the two sources really different when encoded?"
        );
    }
    // The decoder, on the same model, does not look ahead.
    let tgt = common::ids(&[&[1, 7, 6, 5, 4, 3], &[1, 11, 10, 9, 2, 0]]);
    let r = causality_check(&m, &src, &tgt, k, 12, make_causal_mask);
    assert!(
        r.before_k < 1e-5,
        "the decoder saw the future ({:e})",
        r.before_k
    );
}

#[test]
fn ex07_encoder_lookahead_measures_real_changes() {
    let (_vs, m) = eval_model(2, 2);
    // Overwriting with the token that is already there changes nothing at all.
    let same_src = common::ids(&[&[5, 5, 5, 5, 5, 5]]);
    let same = memory_change_per_position(&m, &same_src, 2, 5);
    assert!(
        same.iter().all(|&d| d == 0.0),
        "overwriting tokens with themselves must change nothing, got {same:?} {EVAL}"
    );
    // The numbers are the largest |Δ| per position, measured against the source as the
    // caller passed it (a copy taken before the call).
    check_against_two_encodings(&m, &full_src(), 4, 12, |p| {
        format!(
            "position {p}: not the largest |Δ| of memory row {p} over batch and features \
             (tokens from k = 4 on set to 12, inference mode) {EVAL}"
        )
    });
}

/// Runs the exercise on `src` and checks each position's number against the two
/// sources encoded by `model.encode` (each with its own padding mask), and that
/// `src` came back unchanged.
fn check_against_two_encodings(
    m: &Transformer,
    src: &Tensor,
    k: i64,
    altered: i64,
    what: impl Fn(usize) -> String,
) {
    let original = src.copy();
    let got = memory_change_per_position(m, src, k, altered);
    assert_unchanged(&original, src, "src");
    let ls = src.size()[1];
    // Built another way than the exercise's: the kept head, then a new tail.
    let rows = src.size()[0];
    let tail =
        Tensor::full([rows, ls - k], altered, (src.kind(), src.device()));
    let changed = Tensor::cat(&[original.narrow(1, 0, k), tail], 1);
    let (a, b) = tch::no_grad(|| {
        (m.encode(&original, false).0, m.encode(&changed, false).0)
    });
    let diff = (a - b).abs(); // [B, Ls, d]
    assert_eq!(got.len() as i64, ls, "one value per source position");
    for (p, d) in got.iter().enumerate() {
        let expected = diff.select(1, p as i64).max().double_value(&[]);
        assert_close_f64(*d, expected, 1e-6 * expected.max(1.0), &what(p));
    }
}

/// Each source encoded with its own padding mask: PAD written over real tokens, and
/// real tokens written over PAD. Reusing the source's mask for the altered copy
/// gives other numbers in both cases (with PAD-free sources and a real token as the
/// new one, the two masks are the same and nothing shows).
#[rstest]
#[case::pad_written_over_tokens(full_src(), 3, PAD_ID)]
#[case::tokens_written_over_pad(
    common::ids(&[&[3, 4, 5, 2, PAD_ID, PAD_ID, PAD_ID], &[6, 7, 8, 9, 10, 2, PAD_ID]]),
    4,
    12
)]
fn ex07_encoder_lookahead_masks_each_source_by_its_own_pad(
    #[case] src: Tensor,
    #[case] k: i64,
    #[case] altered: i64,
) {
    let (_vs, m) = eval_model(6, 2);
    check_against_two_encodings(&m, &src, k, altered, |p| {
        format!(
            "position {p}, tokens from k = {k} on set to {altered}: the altered source \
             must be encoded with its own padding mask (model.encode builds it from the \
             ids it is given), not the original's {EVAL}"
        )
    });
}

#[test]
fn ex07_weight_on_pad_of_known_weights() {
    // Uniform weights over 5 keys; batch row 1 has 3 PAD keys, row 0 one.
    let w = Tensor::full([2, 2, 3, 5], 0.2, (Kind::Float, Device::Cpu));
    let keys = common::ids(&[&[3, 4, 5, 2, 0], &[3, 2, 0, 0, 0]]);
    assert_close_f64(
        max_weight_on_pad(&w, &keys),
        0.6,
        1e-6,
        "uniform weights 0.2, 3 PAD keys: a row's weights on PAD add up to 0.6 (sum over \
         the keys, then the max over rows)",
    );
    let none = common::ids(&[&[3, 4, 5, 6, 2], &[3, 2, 7, 8, 9]]);
    assert_eq!(
        max_weight_on_pad(&w, &none),
        0.0,
        "no PAD key, no weight on PAD"
    );
    // One single query row, in one head, puts 0.9 on a PAD key: that is the answer.
    let w2 = Tensor::zeros([2, 2, 3, 5], (Kind::Float, Device::Cpu));
    let _ = w2.narrow(3, 0, 1).fill_(1.0);
    w2.get(0)
        .get(1)
        .get(2)
        .copy_(&Tensor::from_slice(&[0.1f32, 0.0, 0.0, 0.0, 0.9]));
    assert_close_f64(
        max_weight_on_pad(&w2, &keys),
        0.9,
        1e-6,
        "one row puts 0.9 on PAD: the answer is the worst row (max), not an average",
    );
    // Rows that differ: uniform weights give a PAD key as much from all queries together
    // as one row gives all PAD keys, so only these tell the two sums apart.
    let w3 = Tensor::from_slice(&[
        0.6f32, 0.0, 0.0, 0.4, //
        0.2, 0.0, 0.5, 0.3, //
        0.6, 0.0, 0.0, 0.4,
    ])
    .view([1, 1, 3, 4]);
    assert_close_f64(
        max_weight_on_pad(&w3, &common::ids(&[&[3, 2, 0, 0]])),
        0.8,
        1e-6,
        "rows [0.6, 0, 0, 0.4], [0.2, 0, 0.5, 0.3], [0.6, 0, 0, 0.4] over keys [3, 2, PAD, \
         PAD]: the worst row puts 0.5 + 0.3 = 0.8 on PAD. Sum each query row over the \
         keys (the last dimension), not each key over the queries",
    );
}

#[rstest]
fn ex07_weight_on_pad_of_the_model_is_zero(#[values(0, 3)] seed: i64) {
    let (_vs, m) = eval_model(seed, 2);
    let src =
        common::ids(&[&[3, 4, 5, 6, 7, 2, 0, 0], &[9, 10, 11, 2, 0, 0, 0, 0]]);
    let tgt = common::ids(&[&[1, 7, 6, 5, 4, 3, 2], &[1, 11, 10, 9, 2, 0, 0]]);
    tch::no_grad(|| {
        let src_mask = make_padding_mask(&src);
        let (memory, enc_weights) =
            m.encoder.forward_with_weights(&src, &src_mask, false);
        let tgt_mask = make_target_mask(&tgt);
        let (_, dec_weights) = m
            .decoder
            .forward_with_weights(&tgt, &memory, &tgt_mask, &src_mask, false);
        for w in &enc_weights {
            let leak = max_weight_on_pad(w, &src);
            assert!(
                leak < 1e-6,
                "encoder self-attention leaks {leak:e} onto PAD"
            );
        }
        for w in &dec_weights {
            let leak = max_weight_on_pad(&w.cross_attn, &src);
            assert!(leak < 1e-6, "cross-attention leaks {leak:e} onto PAD");
        }
        // Without the mask the same layer does look at PAD.
        let mha = &m.encoder.layers[0].mha;
        let x = m.encoder.embed.forward(&src, false);
        let (_, unmasked) = mha.forward(&x, &x, &x, None, false);
        let leak = max_weight_on_pad(&unmasked, &src);
        assert!(
            leak > 0.05,
            "an unmasked layer should put weight on PAD, measured {leak:e}"
        );
    });
}
