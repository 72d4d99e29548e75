//! Chapter 05 exercises: `cargo test --test exercises_ch05`.
use rstest::rstest;
use tch::nn::OptimizerConfig;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::data::{BOS_ID, EOS_ID, NUM_OFFSET, PAD_ID};
use transformer_course::decoder::DecoderLayer;
use transformer_course::embedding::Init;
use transformer_course::exercises::ch05_decoder::{cross_attention_sublayer, DecoderOnlyBlock, DecoderOnlyLm};
use transformer_course::train::masked_cross_entropy;
use transformer_course::transformer::{make_causal_mask, make_padding_mask};

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

fn randn(shape: &[i64]) -> Tensor {
    Tensor::randn(shape, (Kind::Float, Device::Cpu))
}

#[rstest]
fn ex05_cross_sublayer_matches_the_layer(#[values(0, 6)] seed: i64) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let layer = DecoderLayer::new(vs.root(), 16, 2, 32, 0.0, Init::Paper).unwrap();
    let (x, memory) = (randn(&[2, 4, 16]), randn(&[2, 6, 16]));
    let src = Tensor::from_slice(&[3i64, 4, 5, 2, 0, 0, 7, 8, 2, 0, 0, 0]).view([2, 6]);
    let mask = make_padding_mask(&src);
    let (y, w) = cross_attention_sublayer(&layer, &x, &memory, &mask);
    assert_eq!(y.size(), vec![2, 4, 16]);
    assert_eq!(w.size(), vec![2, 2, 4, 6]);
    let (a, expected_w) = layer.cross_mha.forward(&x.apply(&layer.ln2), &memory, &memory, Some(&mask), false);
    assert!(max_diff(&y, &(&x + a)) < 1e-5, "not x + CrossAttention(LN₂(x), memory)");
    assert!(max_diff(&w, &expected_w) < 1e-6);
    let on_pad = w.get(1).narrow(2, 3, 3).abs().sum(Kind::Float).double_value(&[]);
    assert_eq!(on_pad, 0.0, "weight on PAD source positions");
}

#[test]
fn ex05_cross_sublayer_does_not_mix_decoder_positions() {
    tch::manual_seed(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let layer = DecoderLayer::new(vs.root(), 16, 4, 32, 0.0, Init::Paper).unwrap();
    let (x, memory) = (randn(&[1, 5, 16]), randn(&[1, 3, 16]));
    let mask = Tensor::zeros([1, 1, 1, 3], (Kind::Bool, Device::Cpu));
    let (y, _) = cross_attention_sublayer(&layer, &x, &memory, &mask);
    let x2 = x.copy();
    let _ = x2.get(0).get(2).fill_(3.0);
    let (y2, _) = cross_attention_sublayer(&layer, &x2, &memory, &mask);
    let moved = (&y - &y2).abs().amax([0i64, 2].as_slice(), false);
    for p in 0..5 {
        assert_eq!(moved.double_value(&[p]) > 0.0, p == 2, "cross-attention mixes decoder positions (position {p})");
    }
    // ... while every decoder position reads the memory.
    let (y3, _) = cross_attention_sublayer(&layer, &x, &(&memory * 2.0), &mask);
    assert!((&y - &y3).abs().amax([0i64, 2].as_slice(), false).min().double_value(&[]) > 0.0);
}

fn block(seed: i64) -> (nn::VarStore, DecoderOnlyBlock) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let b = DecoderOnlyBlock::new(vs.root(), 16, 4, 32, 0.0, Init::Paper).unwrap();
    (vs, b)
}

#[rstest]
fn ex05_decoder_only_block_matches_the_formula(#[values(0, 2)] seed: i64) {
    let (_vs, b) = block(seed);
    let x = randn(&[2, 6, 16]);
    let mask = make_causal_mask(6, Device::Cpu);
    let (y, w) = b.forward(&x, &mask, false);
    let h = x.apply(&b.ln1);
    let (a, expected_w) = b.self_mha.forward(&h, &h, &h, Some(&mask), false);
    let x1 = &x + a;
    let expected = &x1 + b.ffn.forward(&x1.apply(&b.ln2), false);
    assert!(max_diff(&y, &expected) < 1e-5, "not Pre-Norm self-attention then FFN");
    assert!(max_diff(&w, &expected_w) < 1e-6);
}

#[rstest]
fn ex05_decoder_only_block_is_causal(#[values(1, 3, 5)] k: i64) {
    let (_vs, b) = block(4);
    let x = randn(&[2, 6, 16]);
    let mask = make_causal_mask(6, Device::Cpu);
    let changed = x.copy();
    let _ = changed.narrow(1, k, 6 - k).fill_(2.0);
    let (y, w) = b.forward(&x, &mask, false);
    let (y2, _) = b.forward(&changed, &mask, false);
    let d = (&y - &y2).abs();
    assert!(d.narrow(1, 0, k).max().double_value(&[]) < 1e-6, "positions before {k} saw the future");
    assert!(d.narrow(1, k, 6 - k).max().double_value(&[]) > 1e-3);
    assert_eq!(w.triu(1).abs().sum(Kind::Float).double_value(&[]), 0.0, "weight above the diagonal");
}

/// `d₁ … dₙ BOS dₙ … d₁ EOS PAD…` and its labels (PAD where the prompt is predicted).
fn lm_batch(rows: &[Vec<i64>], len: usize) -> (Tensor, Tensor) {
    let (mut input, mut labels) = (vec![], vec![]);
    for digits in rows {
        let n = digits.len();
        let mut s: Vec<i64> = digits.iter().map(|d| d + NUM_OFFSET).collect();
        s.push(BOS_ID);
        s.extend(digits.iter().rev().map(|d| d + NUM_OFFSET));
        s.push(EOS_ID);
        s.resize(len + 1, PAD_ID);
        input.extend_from_slice(&s[..len]);
        labels.extend((0..len).map(|i| if i >= n { s[i + 1] } else { PAD_ID }));
    }
    let shape = [rows.len() as i64, len as i64];
    (Tensor::from_slice(&input).view(shape), Tensor::from_slice(&labels).view(shape))
}

fn lm(seed: i64) -> (nn::VarStore, DecoderOnlyLm) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = DecoderOnlyLm::new(vs.root(), 13, 32, 4, 64, 1, 26, 0.0, Init::Paper).unwrap();
    (vs, m)
}

#[rstest]
fn ex05_decoder_only_lm_is_causal_and_ignores_trailing_pad(#[values(2, 6, 9)] k: i64) {
    let (_vs, m) = lm(0);
    let (ids, _) = lm_batch(&[vec![1, 2, 3, 4], vec![9, 0, 5]], 12);
    let logits = tch::no_grad(|| m.forward(&ids, false));
    assert_eq!(logits.size(), vec![2, 12, 13]);
    let changed = ids.copy();
    let _ = changed.narrow(1, k, 12 - k).fill_(12);
    let d = tch::no_grad(|| (&logits - m.forward(&changed, false)).abs());
    assert!(d.narrow(1, 0, k).max().double_value(&[]) < 1e-5, "positions before {k} saw the future");
    assert!(d.narrow(1, k, 12 - k).max().double_value(&[]) > 1e-3);
    // Appending PAD changes none of the existing positions.
    let padded = Tensor::cat(&[ids.shallow_clone(), Tensor::zeros([2, 5], (Kind::Int64, Device::Cpu))], 1);
    let p = tch::no_grad(|| m.forward(&padded, false)).narrow(1, 0, 12);
    assert!((&logits - p).abs().max().double_value(&[]) < 1e-5);
}

#[test]
fn ex05_decoder_only_lm_learns_to_reverse() {
    let (vs, m) = lm(0);
    let mut opt = nn::Adam { beta2: 0.98, ..Default::default() }.build(&vs, 3e-3).unwrap();
    let mut rng = 12345u64;
    let mut next = move |n: u64| {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 33) % n
    };
    let mut losses = vec![];
    for _ in 0..150 {
        let rows: Vec<Vec<i64>> = (0..64).map(|_| (0..3 + next(4)).map(|_| next(10) as i64).collect()).collect();
        let (ids, labels) = lm_batch(&rows, 13);
        let loss = masked_cross_entropy(&m.forward(&ids, true), &labels, 0.0);
        opt.backward_step(&loss);
        losses.push(loss.double_value(&[]));
    }
    let first: f64 = losses[..10].iter().sum::<f64>() / 10.0;
    let last: f64 = losses[140..].iter().sum::<f64>() / 10.0;
    assert!(first > 2.0, "an untrained model should be near ln(13) ≈ 2.56, got {first}");
    assert!(last < 0.6 * first, "the decoder-only model did not learn: loss {first:.3} -> {last:.3}");
}
