//! Chapter 04 exercises: `cargo test --test exercises_ch04`.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::Init;
use transformer_course::encoder::Encoder;
use transformer_course::exercises::ch04_encoder::{encode_by_hand, PostNormEncoderLayer};
use transformer_course::transformer::make_padding_mask;

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

fn src() -> Tensor {
    Tensor::from_slice(&[3i64, 4, 5, 6, 2, 0, 0, 9, 10, 2, 0, 0, 0, 0]).view([2, 7])
}

#[rstest]
fn ex04_by_hand_equals_encoder_forward(#[values(1, 3)] layers: i64, #[values(0, 9)] seed: i64) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let enc = Encoder::new(vs.root(), 13, 32, 4, 64, layers, 14, 0.1, Init::Paper).unwrap();
    // LayerNorm weights away from their defaults, so that leaving one out shows.
    tch::no_grad(|| {
        for (name, mut t) in vs.variables() {
            if name.contains("ln") {
                let noise = Tensor::rand_like(&t) + 0.5;
                t.copy_(&noise);
            }
        }
    });
    let s = src();
    let expected = enc.forward(&s, &make_padding_mask(&s), false);
    let got = encode_by_hand(&enc, &s);
    assert_eq!(got.size(), vec![2, 7, 32]);
    let d = max_diff(&got, &expected);
    assert!(d < 1e-5, "differs from Encoder::forward by {d:e}");
}

fn post_norm(seed: i64) -> (nn::VarStore, PostNormEncoderLayer) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let layer = PostNormEncoderLayer::new(vs.root(), 32, 4, 64, 0.0, Init::Paper).unwrap();
    (vs, layer)
}

#[rstest]
fn ex04_post_norm_matches_the_formula(#[values(0, 3)] seed: i64) {
    let (_vs, layer) = post_norm(seed);
    let x = Tensor::randn([2, 7, 32], (Kind::Float, Device::Cpu)) * 2.0;
    let mask = make_padding_mask(&src());
    let got = layer.forward(&x, &mask, false);
    // LN(x + MHA(x)), then LN(y + FFN(y)).
    let (a, _) = layer.mha.forward(&x, &x, &x, Some(&mask), false);
    let y = (&x + a).apply(&layer.ln1);
    let expected = (&y + layer.ffn.forward(&y, false)).apply(&layer.ln2);
    let d = max_diff(&got, &expected);
    assert!(d < 1e-5, "Post-Norm layer differs from LN(x + Sublayer(x)) by {d:e}");
}

#[test]
fn ex04_post_norm_output_is_normalised() {
    // With LayerNorm's initial weight 1 and bias 0 every output row has mean 0 and variance 1.
    let (_vs, layer) = post_norm(1);
    let x = Tensor::randn([2, 7, 32], (Kind::Float, Device::Cpu)) * 5.0 + 3.0;
    let y = layer.forward(&x, &make_padding_mask(&src()), false);
    let mean = y.mean_dim(-1, false, Kind::Float).abs().max().double_value(&[]);
    let var = y.var_dim(-1, false, false);
    let var_err = (var - 1.0).abs().max().double_value(&[]);
    assert!(mean < 1e-4 && var_err < 1e-3, "rows not normalised: |mean| ≤ {mean:e}, |var − 1| ≤ {var_err:e}");
}

#[test]
fn ex04_post_norm_ignores_padding_and_trains_every_parameter() {
    let (vs, layer) = post_norm(2);
    let s = src();
    let x = Tensor::randn([2, 7, 32], (Kind::Float, Device::Cpu));
    let y = layer.forward(&x, &make_padding_mask(&s), false);
    // Whatever sits at PAD positions must not reach the real ones.
    let x2 = x.copy();
    let _ = x2.get(0).narrow(0, 5, 2).fill_(7.0);
    let y2 = layer.forward(&x2, &make_padding_mask(&s), false);
    let d = max_diff(&y.get(0).narrow(0, 0, 5), &y2.get(0).narrow(0, 0, 5));
    assert!(d < 1e-5, "PAD positions leaked into real ones: {d:e}");
    // Every parameter takes part. (Not W_k's bias: it adds the same amount to every score of
    // a query, which the softmax cancels, so its gradient is zero in any correct layer.)
    y.pow_tensor_scalar(3).sum(Kind::Float).backward();
    for (name, t) in vs.variables().into_iter().filter(|(n, _)| !n.contains("W_k.bias")) {
        let g = t.grad();
        assert!(g.defined() && g.abs().sum(Kind::Float).double_value(&[]) > 0.0, "{name} got no gradient");
    }
}
