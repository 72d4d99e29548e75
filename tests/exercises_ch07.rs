//! Chapter 07 exercises: `cargo test --test exercises_ch07`.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::exercises::ch07_mask_tests::{max_weight_on_pad, memory_change_per_position};
use transformer_course::mask_checks::causality_check;
use transformer_course::transformer::{make_causal_mask, make_padding_mask, Transformer, TransformerConfig};

fn model(seed: i64) -> (nn::VarStore, Transformer) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig { d_model: 32, num_heads: 4, dff: 64, dropout: 0.0, ..TransformerConfig::reverse_task() };
    let m = Transformer::new(vs.root(), cfg).unwrap();
    (vs, m)
}

/// Two sources without PAD, so that every position is a real token.
fn full_src() -> Tensor {
    Tensor::from_slice(&[3i64, 4, 5, 6, 7, 8, 12, 11, 10, 9, 8, 2]).view([2, 6])
}

#[rstest]
fn ex07_the_encoder_looks_ahead(#[values(1, 3, 5)] k: i64, #[values(0, 4)] seed: i64) {
    let (_vs, m) = model(seed);
    let src = full_src();
    let per_position = memory_change_per_position(&m, &src, k, 12);
    assert_eq!(per_position.len(), 6, "one value per source position");
    // From k on the tokens themselves changed; before k the rows move too: no causal mask.
    for (p, d) in per_position.iter().enumerate() {
        assert!(*d > 1e-4, "memory row {p} did not move ({d:e}) although the encoder attends both ways");
    }
    // The decoder, on the same model, does not look ahead.
    let tgt = Tensor::from_slice(&[1i64, 7, 6, 5, 4, 3, 1, 11, 10, 9, 2, 0]).view([2, 6]);
    assert!(causality_check(&m, &src, &tgt, k, 12, make_causal_mask).before_k < 1e-5);
}

#[test]
fn ex07_encoder_lookahead_measures_real_changes() {
    let (_vs, m) = model(2);
    // Overwriting with the token that is already there changes nothing at all.
    let src = Tensor::from_slice(&[5i64, 5, 5, 5, 5, 5]).view([1, 6]);
    let same = memory_change_per_position(&m, &src, 2, 5);
    assert!(same.iter().all(|&d| d == 0.0), "{same:?}");
    // And the numbers are the largest |Δ| per position.
    let src = full_src();
    let got = memory_change_per_position(&m, &src, 4, 12);
    let changed = src.copy();
    let _ = changed.narrow(1, 4, 2).fill_(12);
    let (a, b) = tch::no_grad(|| (m.encode(&src, false).0, m.encode(&changed, false).0));
    let diff = (a - b).abs();
    for (p, d) in got.iter().enumerate() {
        let expected = diff.select(1, p as i64).max().double_value(&[]);
        assert!((d - expected).abs() <= 1e-6 * expected.max(1.0), "position {p}: {d} vs {expected}");
    }
}

#[test]
fn ex07_weight_on_pad_of_known_weights() {
    // Uniform weights over 5 keys; batch row 1 has 3 PAD keys, row 0 one.
    let w = Tensor::full([2, 2, 3, 5], 0.2, (Kind::Float, Device::Cpu));
    let keys = Tensor::from_slice(&[3i64, 4, 5, 2, 0, 3, 2, 0, 0, 0]).view([2, 5]);
    assert!((max_weight_on_pad(&w, &keys) - 0.6).abs() < 1e-6);
    let none = Tensor::from_slice(&[3i64, 4, 5, 6, 2, 3, 2, 7, 8, 9]).view([2, 5]);
    assert_eq!(max_weight_on_pad(&w, &none), 0.0);
    // One single query row, in one head, puts 0.9 on a PAD key: that is the answer.
    let w2 = Tensor::zeros([2, 2, 3, 5], (Kind::Float, Device::Cpu));
    let _ = w2.narrow(3, 0, 1).fill_(1.0);
    w2.get(0).get(1).get(2).copy_(&Tensor::from_slice(&[0.1f32, 0.0, 0.0, 0.0, 0.9]));
    assert!((max_weight_on_pad(&w2, &keys) - 0.9).abs() < 1e-6);
}

#[rstest]
fn ex07_weight_on_pad_of_the_model_is_zero(#[values(0, 3)] seed: i64) {
    let (_vs, m) = model(seed);
    let src = Tensor::from_slice(&[3i64, 4, 5, 6, 7, 2, 0, 0, 9, 10, 11, 2, 0, 0, 0, 0]).view([2, 8]);
    let tgt = Tensor::from_slice(&[1i64, 7, 6, 5, 4, 3, 2, 1, 11, 10, 9, 2, 0, 0]).view([2, 7]);
    tch::no_grad(|| {
        let src_mask = make_padding_mask(&src);
        let (memory, enc_weights) = m.encoder.forward_with_weights(&src, &src_mask, false);
        let (_, dec_weights) = m.decoder.forward_with_weights(&tgt, &memory, &make_causal_mask(7, Device::Cpu).logical_or(&make_padding_mask(&tgt)), &src_mask, false);
        for w in &enc_weights {
            assert!(max_weight_on_pad(w, &src) < 1e-6, "encoder self-attention leaks onto PAD");
        }
        for w in &dec_weights {
            assert!(max_weight_on_pad(&w.cross_attn, &src) < 1e-6, "cross-attention leaks onto PAD");
        }
        // Without the mask the same layer does look at PAD.
        let mha: &MultiHeadAttention = &m.encoder.layers[0].mha;
        let x = m.encoder.embed.forward(&src, false);
        let (_, unmasked) = mha.forward(&x, &x, &x, None, false);
        assert!(max_weight_on_pad(&unmasked, &src) > 0.05, "an unmasked layer should put weight on PAD");
    });
}
