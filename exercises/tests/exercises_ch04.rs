//! Chapter 04 exercises: `cargo test --test exercises_ch04`.
mod common;

use common::{
    assert_close, assert_unchanged, build, randn, seeded, tiny_config,
};
use exercises::ch04_encoder::{encode_by_hand, PostNormEncoderLayer};
use rstest::rstest;
use tch::{nn, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::encoder::Encoder;
use transformer_course::transformer::make_padding_mask;

fn src() -> Tensor {
    common::ids(&[&[3, 4, 5, 6, 2, 0, 0], &[9, 10, 2, 0, 0, 0, 0]])
}

#[rstest]
fn ex04_by_hand_equals_encoder_forward(
    #[values(1, 3)] layers: i64,
    #[values(0, 9)] seed: i64,
) {
    // Dropout 0.1, so that running in training mode shows.
    let cfg = TransformerConfig {
        dropout: 0.1,
        ..tiny_config(layers)
    };
    let (vs, enc) = build(seed, |p| Encoder::new(p, &cfg).unwrap());
    // LayerNorm weights away from their defaults, so that leaving one out shows.
    common::perturb_layer_norms(&vs, seed);
    let s = src();
    let expected = enc.forward(&s, &make_padding_mask(&s), false);
    let got = seeded(seed, || encode_by_hand(&enc, &s));
    assert_close(
        &got,
        &expected,
        1e-5,
        "differs from Encoder::forward: every layer, then ln_final, all with train = false \
         and the padding mask of src",
    );
}

fn post_norm_config(dropout: f64) -> TransformerConfig {
    TransformerConfig {
        dropout,
        ..tiny_config(1)
    }
}

fn post_norm(seed: i64, dropout: f64) -> (nn::VarStore, PostNormEncoderLayer) {
    build(seed, |p| {
        PostNormEncoderLayer::new(p, &post_norm_config(dropout)).unwrap()
    })
}

/// LN₂(y + drop(FFN(y))) with y = LN₁(x + drop(MHA(x))), from the layer's parts.
fn post_norm_formula(
    l: &PostNormEncoderLayer,
    x: &Tensor,
    mask: &Tensor,
    train: bool,
) -> Tensor {
    let p = l.dropout;
    let (a, _) = l.mha.forward(x, x, x, Some(mask), train);
    let y = (x + a.dropout(p, train)).apply(&l.ln1);
    (&y + l.ffn.forward(&y).dropout(p, train)).apply(&l.ln2)
}

#[rstest]
fn ex04_post_norm_matches_the_formula(#[values(0, 3)] seed: i64) {
    let (vs, layer) = post_norm(seed, 0.0);
    // Fresh LayerNorms (γ = 1, β = 0) are interchangeable: only trained ones tell ln1
    // from ln2.
    common::perturb_layer_norms(&vs, seed + 10);
    let x = randn(seed + 1, &[2, 7, 32]) * 2.0;
    let x_before = x.copy();
    let mask = make_padding_mask(&src());
    let got = layer.forward(&x, &mask, false);
    assert_unchanged(&x_before, &x, "x");
    assert_close(
        &got,
        &post_norm_formula(&layer, &x, &mask, false),
        1e-5,
        "Post-Norm: y = LN₁(x + MHA(x)), then LN₂(y + FFN(y)); the sublayers read the \
         stream without a LayerNorm in front, ln1 after the attention and ln2 after the \
         FFN (the test's LayerNorms are trained, so swapping them shows)",
    );
}

#[test]
fn ex04_post_norm_drops_out_where_the_encoder_layer_does() {
    let (vs, layer) = post_norm(4, 0.3);
    common::perturb_layer_norms(&vs, 14);
    let x = randn(5, &[2, 7, 32]);
    let mask = make_padding_mask(&src());
    // The same seed draws the same dropout masks, in the same order, for the formula.
    let got = seeded(6, || layer.forward(&x, &mask, true));
    let want = seeded(6, || post_norm_formula(&layer, &x, &mask, true));
    assert_close(
        &got,
        &want,
        1e-5,
        "in training: dropout on the attention output and on the FFN output, each before \
         its residual addition (and mha.forward(.., train))",
    );
    let inference = layer.forward(&x, &mask, false);
    assert!(
        inference.equal(&layer.forward(&x, &mask, false)),
        "inference must be deterministic"
    );
}

#[test]
fn ex04_post_norm_output_is_normalised() {
    // With LayerNorm's initial weight 1 and bias 0 every output row has mean 0 and variance 1.
    let (_vs, layer) = post_norm(1, 0.0);
    let x = randn(2, &[2, 7, 32]) * 5.0 + 3.0;
    let y = layer.forward(&x, &make_padding_mask(&src()), false);
    let mean = y
        .mean_dim(-1, false, Kind::Float)
        .abs()
        .max()
        .double_value(&[]);
    let var = y.var_dim(-1, false, false);
    let var_err = (var - 1.0).abs().max().double_value(&[]);
    assert!(
        mean < 1e-4 && var_err < 1e-3,
        "rows not normalised (|mean| ≤ {mean:e}, |var − 1| ≤ {var_err:e}): in Post-Norm the \
         last step is ln2"
    );
}

#[test]
fn ex04_post_norm_ignores_padding_and_trains_every_parameter() {
    let (vs, layer) = post_norm(2, 0.0);
    let s = src();
    let x = randn(3, &[2, 7, 32]);
    let y = layer.forward(&x, &make_padding_mask(&s), false);
    // Whatever sits at PAD positions must not reach the real ones.
    let x2 = x.copy();
    let _ = x2.get(0).narrow(0, 5, 2).fill_(7.0);
    let y2 = layer.forward(&x2, &make_padding_mask(&s), false);
    assert_close(
        &y2.get(0).narrow(0, 0, 5),
        &y.get(0).narrow(0, 0, 5),
        1e-5,
        "PAD positions leaked into real ones: pass pad_mask to the attention",
    );
    // Every parameter takes part. (Not W_k's bias: it adds the same amount to every score of
    // a query, which the softmax cancels, so its gradient is zero in any correct layer.)
    y.pow_tensor_scalar(3).sum(Kind::Float).backward();
    for (name, t) in vs
        .variables()
        .into_iter()
        .filter(|(n, _)| !n.contains("W_k.bias"))
    {
        let g = t.grad();
        let used =
            g.defined() && g.abs().sum(Kind::Float).double_value(&[]) > 0.0;
        assert!(used, "{name} got no gradient: is it used in forward?");
    }
}

#[test]
fn ex04_by_hand_is_written_by_hand() {
    let why =
        "run the encoder's parts yourself: the padding mask, enc.embed, every \
               layer, enc.ln_final";
    let (_vs, enc) = build(4, |p| Encoder::new(p, &tiny_config(2)).unwrap());
    common::assert_not_called(
        "ex04_by_hand",
        &[
            ("Encoder::forward", why),
            ("Encoder::forward_with_weights", why),
        ],
        || encode_by_hand(&enc, &src()),
    );
}
