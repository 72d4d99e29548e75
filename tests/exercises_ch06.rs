//! Chapter 06 exercises: `cargo test --test exercises_ch06`. The masks are checked with
//! chapter 07's properties, not against the library's masks.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::Init;
use transformer_course::exercises::ch06_transformer::{count_parameters, my_causal_mask, my_padding_mask};
use transformer_course::mask_checks::causality_check;
use transformer_course::transformer::{make_causal_mask, parameter_count, Transformer, TransformerConfig};

const ATOL: f64 = 1e-5;

fn model(seed: i64) -> (nn::VarStore, Transformer) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig { d_model: 32, num_heads: 4, dff: 64, dropout: 0.0, ..TransformerConfig::reverse_task() };
    let m = Transformer::new(vs.root(), cfg).unwrap();
    (vs, m)
}

fn batch() -> (Tensor, Tensor) {
    let src = Tensor::from_slice(&[3i64, 4, 5, 6, 7, 2, 0, 0, 9, 10, 11, 2, 0, 0, 0, 0]).view([2, 8]);
    let tgt = Tensor::from_slice(&[1i64, 7, 6, 5, 4, 3, 2, 1, 11, 10, 9, 2, 0, 0]).view([2, 7]);
    (src, tgt)
}

/// The whole forward pass with the learner's padding mask for the source side.
fn forward_with_my_padding(m: &Transformer, src: &Tensor, tgt: &Tensor) -> Tensor {
    tch::no_grad(|| {
        let mask = my_padding_mask(src);
        let memory = m.encoder.forward(src, &mask, false);
        m.decode_with_mask_fn(tgt, &memory, &mask, make_causal_mask, false).0
    })
}

#[rstest]
fn ex06_padding_mask_makes_source_padding_invisible(#[values(1, 3, 6)] extra: i64, #[values(0, 5)] seed: i64) {
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    let padded = Tensor::cat(&[src.shallow_clone(), Tensor::zeros([2, extra], (Kind::Int64, Device::Cpu))], 1);
    let d = (forward_with_my_padding(&m, &src, &tgt) - forward_with_my_padding(&m, &padded, &tgt)).abs().max().double_value(&[]);
    assert!(d <= ATOL, "appending {extra} PAD to the source moved the logits by {d:e}");
}

#[test]
fn ex06_padding_mask_hides_only_pad() {
    let (_vs, m) = model(1);
    let (src, tgt) = batch();
    let mask = my_padding_mask(&src);
    assert_eq!(mask.kind(), Kind::Bool);
    // Broadcasts against scores [B, h, Lq, Lk] and says "masked" exactly at the PAD keys.
    let full = mask.expand([2, 4, 3, 8], false);
    let expected = src.eq(0).unsqueeze(1).unsqueeze(1).expand([2, 4, 3, 8], false);
    assert!(full.equal(&expected), "true must mean: this key is PAD");
    // A real source token does matter.
    let changed = src.copy();
    let _ = changed.get(0).get(2).fill_(12);
    let d = (forward_with_my_padding(&m, &src, &tgt) - forward_with_my_padding(&m, &changed, &tgt)).abs().max().double_value(&[]);
    assert!(d > 1e-3, "changing a real source token changed nothing");
}

#[rstest]
fn ex06_causal_mask_passes_the_causality_check(#[values(1, 2, 3, 5, 6)] k: i64, #[values(0, 7)] seed: i64) {
    let (_vs, m) = model(seed);
    let (src, tgt) = batch();
    let r = causality_check(&m, &src, &tgt, k, 12, my_causal_mask);
    assert!(r.before_k <= ATOL, "positions before k={k} changed by {:e}: the past sees the future", r.before_k);
    assert!(r.from_k > 1e-3, "positions from k={k} on did not change ({:e})", r.from_k);
}

#[rstest]
fn ex06_causal_mask_lets_each_position_see_itself_and_the_past(#[values(1, 4, 9)] l: i64) {
    let mask = my_causal_mask(l, Device::Cpu);
    assert_eq!(mask.size(), vec![1, 1, l, l]);
    assert_eq!(mask.kind(), Kind::Bool);
    for i in 0..l {
        for j in 0..l {
            assert_eq!(mask.int64_value(&[0, 0, i, j]) != 0, j > i, "query {i}, key {j}");
        }
    }
}

#[test]
fn ex06_causal_mask_with_target_padding() {
    let (_vs, m) = model(3);
    let (src, tgt) = batch();
    let run = |t: &Tensor| {
        tch::no_grad(|| {
            let (memory, src_mask) = m.encode(&src, false);
            m.decode_with_mask_fn(t, &memory, &src_mask, my_causal_mask, false).0
        })
    };
    let padded = Tensor::cat(&[tgt.shallow_clone(), Tensor::zeros([2, 3], (Kind::Int64, Device::Cpu))], 1);
    let d = (run(&tgt) - run(&padded).narrow(1, 0, 7)).abs().max().double_value(&[]);
    assert!(d <= ATOL, "target PAD reached real positions: {d:e}");
}

#[rstest]
#[case::course(TransformerConfig::reverse_task())]
#[case::tiny(TransformerConfig { d_model: 32, num_heads: 4, dff: 64, num_layers: 1, ..TransformerConfig::reverse_task() })]
#[case::wide_vocab(TransformerConfig { src_vocab: 50, tgt_vocab: 70, d_model: 24, num_heads: 3, dff: 40, num_layers: 3, max_len: 9, dropout: 0.0, init: Init::Paper })]
fn ex06_param_count_from_the_config(#[case] c: TransformerConfig) {
    let vs = nn::VarStore::new(Device::Cpu);
    Transformer::new(vs.root(), c).unwrap();
    assert_eq!(count_parameters(&c), parameter_count(&vs), "for {c:?}");
}

#[test]
fn ex06_param_count_of_the_course_model() {
    assert_eq!(count_parameters(&TransformerConfig::reverse_task()), 931_213);
}
