//! Chapter 03 exercises: `cargo test --test exercises_ch03`.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::Init;
use transformer_course::exercises::ch03_feed_forward::{swiglu_hidden_matching, SwiGluFeedForward};
use transformer_course::feed_forward::FeedForward;
use transformer_course::transformer::parameter_count;

/// Fixed, easily reproduced weights: no dependence on the init or the RNG.
fn fixed(t: &Tensor, phase: f64) -> Tensor {
    let n = t.numel() as i64;
    let values = (Tensor::arange(n, (Kind::Double, Device::Cpu)) * 0.37 + phase).sin() * 0.3;
    values.to_kind(Kind::Float).view(t.size().as_slice())
}

fn swiglu_with_fixed_weights(d: i64, hidden: i64) -> (nn::VarStore, SwiGluFeedForward) {
    let vs = nn::VarStore::new(Device::Cpu);
    let f = SwiGluFeedForward::new(vs.root(), d, hidden, 0.0, Init::Paper);
    let set = |t: &Tensor, phase: f64| tch::no_grad(|| t.shallow_clone().copy_(&fixed(t, phase)));
    set(&f.lin_in.ws, 0.1);
    set(f.lin_in.bs.as_ref().unwrap(), 0.7);
    set(&f.lin_out.ws, 1.3);
    set(f.lin_out.bs.as_ref().unwrap(), 2.1);
    (vs, f)
}

#[rstest]
#[case(8, 6)]
#[case(16, 40)]
fn ex03_swiglu_matches_the_formula(#[case] d: i64, #[case] hidden: i64) {
    let (_vs, f) = swiglu_with_fixed_weights(d, hidden);
    let x = fixed(&Tensor::zeros([2, 3, d], (Kind::Float, Device::Cpu)), 0.5) * 3.0;
    let got = f.forward(&x, false);
    assert_eq!(got.size(), vec![2, 3, d], "the FFN must keep the shape");

    // The formula, term by term: gate rows first, value rows second.
    let (w, b) = (&f.lin_in.ws, f.lin_in.bs.as_ref().unwrap());
    let gate = x.matmul(&w.narrow(0, 0, hidden).tr()) + b.narrow(0, 0, hidden);
    let value = x.matmul(&w.narrow(0, hidden, hidden).tr()) + b.narrow(0, hidden, hidden);
    let silu = &gate * gate.sigmoid();
    let expected = (silu * value).matmul(&f.lin_out.ws.tr()) + f.lin_out.bs.as_ref().unwrap();
    let diff = (&got - &expected).abs().max().double_value(&[]);
    assert!(diff < 1e-5, "SwiGLU differs from W_out·(silu(x·W_gate) ⊙ x·W_value) by {diff:e}");
}

#[test]
fn ex03_swiglu_is_position_wise() {
    let (_vs, f) = swiglu_with_fixed_weights(8, 12);
    let x = Tensor::randn([1, 5, 8], (Kind::Float, Device::Cpu));
    let y = f.forward(&x, false);
    let x2 = x.copy();
    let _ = x2.get(0).get(3).fill_(4.0);
    let y2 = f.forward(&x2, false);
    let per_position = (&y - &y2).abs().amax([0i64, 2].as_slice(), false);
    for p in 0..5 {
        let moved = per_position.double_value(&[p]);
        assert_eq!(moved > 0.0, p == 3, "position {p} moved by {moved:e}: only position 3 was changed");
    }
}

#[test]
fn ex03_swiglu_dropout_only_in_training() {
    let vs = nn::VarStore::new(Device::Cpu);
    let f = SwiGluFeedForward::new(vs.root(), 16, 32, 0.5, Init::Paper);
    let x = Tensor::randn([2, 4, 16], (Kind::Float, Device::Cpu));
    assert!(f.forward(&x, false).equal(&f.forward(&x, false)), "inference must be deterministic");
    assert!(!f.forward(&x, true).equal(&f.forward(&x, false)), "training must drop out");
}

fn count<F: FnOnce(nn::Path)>(build: F) -> i64 {
    let vs = nn::VarStore::new(Device::Cpu);
    build(vs.root());
    parameter_count(&vs)
}

#[rstest]
#[case(128, 512)]
#[case(32, 64)]
#[case(512, 2048)]
#[case(16, 100)]
#[case(10, 7)]
fn ex03_param_budget_is_the_closest_width(#[case] d: i64, #[case] dff: i64) {
    let ffn = count(|p| {
        FeedForward::new(p, d, dff, 0.0, Init::Paper);
    });
    let swiglu = |h: i64| count(|p| {
        SwiGluFeedForward::new(p, d, h, 0.0, Init::Paper);
    });
    let h = swiglu_hidden_matching(d, dff);
    assert!(h > 0, "hidden width must be positive, got {h}");
    let gap = |h: i64| (swiglu(h) - ffn).abs();
    assert!(gap(h) <= gap(h - 1) && gap(h) <= gap(h + 1), "hidden={h} leaves a gap of {}, but {} or {} do better", gap(h), h - 1, h + 1);
}
