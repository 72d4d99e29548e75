//! Chapter 03 exercises: `cargo test --test exercises_ch03`.
mod common;

use common::{assert_close, assert_unchanged, build, config};
use exercises::ch03_feed_forward::{swiglu_hidden_matching, SwiGluFeedForward};
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::feed_forward::FeedForward;
use transformer_course::layers::parameter_count;

/// Fixed, easily reproduced values of `t`'s shape: no dependence on the init or the RNG.
fn fixed(t: &Tensor, phase: f64) -> Tensor {
    let n = t.numel() as i64;
    let values =
        (Tensor::arange(n, (Kind::Double, Device::Cpu)) * 0.37 + phase).sin()
            * 0.3;
    values.to_kind(Kind::Float).view(t.size().as_slice())
}

/// A SwiGLU layer of width `d` and hidden width `hidden` (`d_ff`), every weight fixed.
fn swiglu_with_fixed_weights(
    d: i64,
    hidden: i64,
) -> (nn::VarStore, SwiGluFeedForward) {
    let (vs, f) =
        build(0, |p| SwiGluFeedForward::new(p, &config(d, 2, hidden)));
    let set = |t: &Tensor, phase: f64| {
        tch::no_grad(|| t.shallow_clone().copy_(&fixed(t, phase)))
    };
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
    let x =
        fixed(&Tensor::zeros([2, 3, d], (Kind::Float, Device::Cpu)), 0.5) * 3.0;
    let x_before = x.copy();
    let got = f.forward(&x);
    assert_unchanged(&x_before, &x, "x");
    // The formula, term by term: gate rows first, value rows second.
    let (w, b) = (&f.lin_in.ws, f.lin_in.bs.as_ref().unwrap());
    let gate = x.matmul(&w.narrow(0, 0, hidden).tr()) + b.narrow(0, 0, hidden);
    let value = x.matmul(&w.narrow(0, hidden, hidden).tr())
        + b.narrow(0, hidden, hidden);
    let silu = &gate * gate.sigmoid();
    let expected = (silu * value).matmul(&f.lin_out.ws.tr())
        + f.lin_out.bs.as_ref().unwrap();
    assert_close(
        &got,
        &expected,
        1e-5,
        "SwiGLU differs from W_out·(silu(x·W_gate) ⊙ x·W_value): is the gate the first half \
         of lin_in's output, and silu(a) = a·σ(a) (not σ(a) alone)?",
    );
}

#[test]
fn ex03_swiglu_is_position_wise() {
    let (_vs, f) = swiglu_with_fixed_weights(8, 12);
    let x = common::randn(3, &[1, 5, 8]);
    let y = f.forward(&x);
    let x2 = x.copy();
    let _ = x2.get(0).get(3).fill_(4.0);
    let y2 = f.forward(&x2);
    let per_position = (&y - &y2).abs().amax([0i64, 2].as_slice(), false);
    for p in 0..5 {
        let moved = per_position.double_value(&[p]);
        assert_eq!(
            moved > 0.0,
            p == 3,
            "position {p} moved by {moved:e} although only position 3 changed: the FFN must \
             act on the last dimension alone"
        );
    }
}

#[test]
fn ex03_swiglu_is_a_drop_in_for_feed_forward() {
    // Same config, same input and output shapes, and the hidden width is cfg.d_ff.
    let cfg = config(16, 4, 24);
    let (_vs, f) = build(1, |p| SwiGluFeedForward::new(p, &cfg));
    assert_eq!(f.hidden, 24, "the hidden width is cfg.d_ff");
    assert_eq!(
        f.lin_in.ws.size(),
        vec![48, 16],
        "lin_in maps d_model → 2·hidden"
    );
    let x = common::randn(2, &[2, 7, 16]);
    let y = f.forward(&x);
    assert_eq!(
        y.size(),
        vec![2, 7, 16],
        "the FFN must keep the shape [B, L, d]"
    );
    assert!(
        y.equal(&f.forward(&x)),
        "forward must be deterministic: no dropout inside the FFN"
    );
}

/// Trainable parameters of whatever `make` builds.
fn count<T>(make: impl FnOnce(nn::Path) -> T) -> i64 {
    let (vs, _) = build(0, make);
    parameter_count(&vs)
}

#[rstest]
#[case(128, 512)]
#[case(32, 64)]
#[case(512, 2048)]
#[case(16, 100)]
#[case(10, 7)]
#[case(4, 9)]
fn ex03_param_budget_is_the_closest_width(#[case] d: i64, #[case] d_ff: i64) {
    let cfg = |d_ff: i64| TransformerConfig {
        d_ff,
        ..config(d, 2, d_ff)
    };
    let ffn = count(|p| FeedForward::new(p, &cfg(d_ff)));
    let swiglu = |h: i64| count(|p| SwiGluFeedForward::new(p, &cfg(h)));
    let h = swiglu_hidden_matching(d, d_ff);
    assert!(h > 0, "the hidden width must be positive, got {h}");
    let gap = |h: i64| (swiglu(h) - ffn).abs();
    assert!(
        gap(h) <= gap(h - 1) && gap(h) <= gap(h + 1),
        "d_model {d}, d_ff {d_ff} ({ffn} parameters): width {h} misses by {}, but {} misses \
         by {} and {} by {}: compare the integers on both sides of the real solution",
        gap(h),
        h - 1,
        gap(h - 1),
        h + 1,
        gap(h + 1)
    );
}

#[test]
fn ex03_param_budget_is_solved_not_searched() {
    let why = "write both counts as formulas in h, set them equal and solve: building \
               modules for candidate widths and counting their variables finds the \
               same integer without the equation this exercise is about";
    common::assert_not_called(
        "ex03_param_budget",
        &[("parameter_count", why)],
        || swiglu_hidden_matching(128, 512),
    );
    common::assert_not_in_source(
        include_str!("../src/ch03_feed_forward.rs"),
        "ex03_param_budget",
        &[("VarStore", why)],
    );
}
