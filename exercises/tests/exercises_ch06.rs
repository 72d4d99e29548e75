//! Chapter 06 exercises: `cargo test --test exercises_ch06`. The masks are checked
//! with chapter 07's properties, not against the library's masks.
mod common;

use common::{model_with, tiny_config, tiny_model};
use exercises::ch06_transformer::{
    count_parameters, my_causal_mask, my_padding_mask,
};
use rstest::rstest;
use tch::{Device, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::layers::parameter_count;
use transformer_course::mask_checks::causality_check;
use transformer_course::transformer::{make_causal_mask, Transformer};
use transformer_course::vocab::PAD_ID;

const ATOL: f64 = 1e-5;

fn batch() -> (Tensor, Tensor) {
    let src =
        common::ids(&[&[3, 4, 5, 6, 7, 2, 0, 0], &[9, 10, 11, 2, 0, 0, 0, 0]]);
    let tgt = common::ids(&[&[1, 7, 6, 5, 4, 3, 2], &[1, 11, 10, 9, 2, 0, 0]]);
    (src, tgt)
}

/// The whole forward pass with the learner's padding mask for the source side.
fn forward_with_my_padding(
    m: &Transformer,
    src: &Tensor,
    tgt: &Tensor,
) -> Tensor {
    tch::no_grad(|| {
        let mask = my_padding_mask(src);
        let memory = m.encoder.forward(src, &mask, false);
        m.decode_with_weights(tgt, &memory, &mask, make_causal_mask, false)
            .0
    })
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[rstest]
fn ex06_padding_mask_makes_source_padding_invisible(
    #[values(1, 3, 6)] extra: i64,
    #[values(0, 5)] seed: i64,
) {
    // Eight heads, not the course's four: the mask serves any number of heads.
    let cfg = TransformerConfig {
        num_heads: 8,
        ..tiny_config(2)
    };
    let (_vs, m) = model_with(cfg, seed);
    let (src, tgt) = batch();
    let pad = Tensor::full([2, extra], PAD_ID, (Kind::Int64, Device::Cpu));
    let padded = Tensor::cat(&[src.shallow_clone(), pad], 1);
    let d = max_diff(
        &forward_with_my_padding(&m, &src, &tgt),
        &forward_with_my_padding(&m, &padded, &tgt),
    );
    assert!(
        d <= ATOL,
        "appending {extra} PAD to the source moved the logits by {d:e}: the mask must be true \
         exactly at the PAD keys"
    );
}

#[test]
fn ex06_padding_mask_hides_only_pad() {
    let (_vs, m) = tiny_model(1, 2);
    let (src, tgt) = batch();
    let mask = my_padding_mask(&src);
    assert_eq!(
        mask.kind(),
        Kind::Bool,
        "a mask is a bool tensor (masked_fill wants one)"
    );
    assert_eq!(
        mask.dim(),
        4,
        "the mask must be 4-D, [B, 1, 1, Lk], got {:?}",
        mask.size()
    );
    assert_eq!(
        mask.size()[1],
        1,
        "the mask's head dimension must be 1, so that it broadcasts over any number of \
         heads (this model has 4, as the course's does; others have 8), got {:?}",
        mask.size()
    );
    // Square scores first (self-attention, Lq = Lk = 8): a mask on the query axis
    // broadcasts without complaint there, so only its values can tell.
    let pad = src.eq(PAD_ID);
    let square = [2, 4, 8, 8];
    if let Ok(got) = mask.f_expand(square, false) {
        let on_queries = pad.unsqueeze(1).unsqueeze(-1).expand(square, false);
        let on_keys = pad.unsqueeze(1).unsqueeze(1).expand(square, false);
        assert!(
            got.equal(&on_keys) || !got.equal(&on_queries),
            "the mask hides PAD *queries* (rows of the scores), shape {:?}: a PAD key must be \
             hidden from every query, so the flags go on the last axis, [B, 1, 1, Lk]",
            mask.size()
        );
    }
    // Broadcasts against scores [B, h, Lq, Lk] and says "masked" exactly at the PAD keys.
    let full = mask.expand([2, 4, 3, 8], false);
    let expected = src
        .eq(PAD_ID)
        .unsqueeze(1)
        .unsqueeze(1)
        .expand([2, 4, 3, 8], false);
    assert!(
        full.equal(&expected),
        "the mask must be true exactly where the key is PAD, and broadcast over heads and \
         queries: [B, 1, 1, Lk], got {:?}",
        mask.size()
    );
    // PAD at the start and in the middle of a row too: a mask built from the number of
    // real tokens (position ≥ length) agrees with this one only while PAD sits at the end.
    let scattered =
        common::ids(&[&[0, 3, 4, 0, 5, 2, 0, 0], &[0, 0, 9, 10, 0, 11, 2, 0]]);
    let got = my_padding_mask(&scattered).expand([2, 4, 3, 8], false);
    let want = scattered
        .eq(PAD_ID)
        .unsqueeze(1)
        .unsqueeze(1)
        .expand([2, 4, 3, 8], false);
    assert!(
        got.equal(&want),
        "ids with PAD at the start and in the middle of a row ([[0, 3, 4, 0, 5, 2, 0, 0], \
         [0, 0, 9, 10, 0, 11, 2, 0]]): the mask must be true exactly where the id is \
         PAD_ID, wherever in the row it sits, not from a length"
    );
    // A real source token does matter.
    let changed = src.copy();
    let _ = changed.get(0).get(2).fill_(12);
    let d = max_diff(
        &forward_with_my_padding(&m, &src, &tgt),
        &forward_with_my_padding(&m, &changed, &tgt),
    );
    assert!(
        d > 1e-3,
        "changing a real source token changed nothing: real tokens masked?"
    );
}

#[rstest]
fn ex06_causal_mask_passes_the_causality_check(
    #[values(1, 2, 3, 5, 6)] k: i64,
    #[values(0, 7)] seed: i64,
) {
    let (_vs, m) = tiny_model(seed, 2);
    let (src, tgt) = batch();
    let r = causality_check(&m, &src, &tgt, k, 12, my_causal_mask);
    assert!(
        r.before_k <= ATOL,
        "positions before k={k} changed by {:e}: the past sees the future (is key j > query \
         i masked?)",
        r.before_k
    );
    assert!(
        r.from_k > 1e-3,
        "positions from k={k} on did not change ({:e}): does each position see itself?",
        r.from_k
    );
}

#[rstest]
fn ex06_causal_mask_lets_each_position_see_itself_and_the_past(
    // 15 and 23: longer than the course's max_len 14, so that a mask cut from a
    // table made for 14 positions shows.
    #[values(1, 4, 9, 15, 23)] l: i64,
) {
    let mask = my_causal_mask(l, Device::Cpu);
    assert_eq!(
        mask.size(),
        vec![1, 1, l, l],
        "the causal mask is [1, 1, l, l]"
    );
    assert_eq!(mask.kind(), Kind::Bool, "a mask is a bool tensor");
    for i in 0..l {
        for j in 0..l {
            let masked = mask.int64_value(&[0, 0, i, j]) != 0;
            assert_eq!(
                masked,
                j > i,
                "query {i}, key {j}: {} (true = hidden, exactly for j > i)",
                if masked { "hidden" } else { "visible" }
            );
        }
    }
}

#[test]
fn ex06_causal_mask_with_target_padding() {
    let (_vs, m) = tiny_model(3, 2);
    let (src, tgt) = batch();
    let run = |t: &Tensor| {
        tch::no_grad(|| {
            let (memory, src_mask) = m.encode(&src, false);
            m.decode_with_weights(t, &memory, &src_mask, my_causal_mask, false)
                .0
        })
    };
    let pad = Tensor::full([2, 3], PAD_ID, (Kind::Int64, Device::Cpu));
    let padded = Tensor::cat(&[tgt.shallow_clone(), pad], 1);
    let d = max_diff(&run(&tgt), &run(&padded).narrow(1, 0, 7));
    assert!(d <= ATOL, "target PAD reached real positions: {d:e}");
}

#[rstest]
#[case::course(TransformerConfig::reverse_task())]
#[case::tiny(tiny_config(1))]
#[case::wide_vocab(TransformerConfig {
    src_vocab: 50, tgt_vocab: 70, d_model: 24, num_heads: 3, d_ff: 40, num_layers: 3,
    max_len: 9, dropout: 0.0, init: Init::Paper,
})]
fn ex06_param_count_from_the_config(#[case] c: TransformerConfig) {
    let want = parameter_count(&model_with(c, 0).0);
    let got = count_parameters(&c);
    assert_eq!(
        got,
        want,
        "for {c:?}: off by {}. Per Linear n·m + m, per LayerNorm 2d, per Embedding V·d; \
         the position tables are not parameters",
        got - want
    );
}

#[test]
fn ex06_param_count_of_the_course_model() {
    let got = count_parameters(&TransformerConfig::reverse_task());
    assert_eq!(
        got,
        931_213,
        "the course's model has 931,213 parameters, off by {}",
        got - 931_213
    );
}

#[test]
fn ex06_padding_mask_is_written_by_hand() {
    common::assert_not_called(
        "ex06_padding_mask",
        &[(
            "make_padding_mask",
            "compare the ids with PAD_ID and give the result the two missing dimensions",
        )],
        || my_padding_mask(&common::ids(&[&[3, 4, 0], &[5, 0, 0]])),
    );
}

#[test]
fn ex06_causal_mask_is_written_by_hand_on_its_device() {
    let source = include_str!("../src/ch06_transformer.rs");
    let why =
        "compare query and key indices (or triu a matrix of ones) yourself";
    common::assert_not_called(
        "ex06_causal_mask",
        &[
            // Chapter 07's table CAUSAL_MASKS starts with it too.
            ("make_causal_mask", why),
            ("make_target_mask", why),
        ],
        || my_causal_mask(5, Device::Cpu),
    );
    // Only the CPU runs here, so a mask built on the CPU whatever was asked for would
    // pass every other test; it fails on a GPU inside the model.
    let code = common::region_code(source, "ex06_causal_mask");
    assert!(
        !code.contains("Device::Cpu") && code.contains("device"),
        "ex06_causal_mask builds its mask on Device::Cpu (or never uses `device`): the mask \
         must live where the scores are, on the `device` you are given"
    );
    if tch::Cuda::is_available() {
        let on = Device::Cuda(0);
        assert_eq!(
            my_causal_mask(3, on).device(),
            on,
            "the mask is not on {on:?}"
        );
    }
}

#[test]
fn ex06_param_count_is_counted_not_built() {
    let why = "count from the config alone, per Linear n·m + m, per LayerNorm 2d, per \
               Embedding V·d: building the model and counting its variables answers a \
               different question (what the code made, not what the architecture holds)";
    common::assert_not_called(
        "ex06_param_count",
        &[("parameter_count", why), ("Transformer::new", why)],
        || count_parameters(&common::tiny_config(2)),
    );
    common::assert_not_in_source(
        include_str!("../src/ch06_transformer.rs"),
        "ex06_param_count",
        &[("VarStore", why)],
    );
}
