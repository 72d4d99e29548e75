//! Chapter 09 exercises: `cargo test --test exercises_ch09`.
use rstest::rstest;
use tch::{Device, Kind, Reduction, Tensor};
use transformer_course::data::PAD_ID;
use transformer_course::exercises::ch09_train_reverse::{label_smoothed_loss, smoothed_loss_floor, warmup_cosine_lr};
use transformer_course::train::masked_cross_entropy;

fn logits_and_labels(seed: i64) -> (Tensor, Tensor) {
    tch::manual_seed(seed);
    let logits = Tensor::randn([6, 13], (Kind::Float, Device::Cpu)) * 3.0;
    let labels = Tensor::from_slice(&[5i64, PAD_ID, 12, 3, PAD_ID, 1]);
    (logits, labels)
}

#[rstest]
fn ex09_label_smoothing_matches_libtorch(#[values(0.0, 0.1, 0.3)] eps: f64, #[values(0, 1)] seed: i64) {
    let (logits, labels) = logits_and_labels(seed);
    let mine = label_smoothed_loss(&logits, &labels, eps);
    assert_eq!(mine.numel(), 1);
    let tch_loss = logits.cross_entropy_loss::<Tensor>(&labels, None, Reduction::Mean, PAD_ID, eps);
    let course = masked_cross_entropy(&logits.unsqueeze(0), &labels.unsqueeze(0), eps);
    let (a, b, c) = (mine.double_value(&[]), tch_loss.double_value(&[]), course.double_value(&[]));
    assert!((a - b).abs() < 1e-5, "ε={eps}: {a} vs cross_entropy_loss {b}");
    assert!((a - c).abs() < 1e-5, "ε={eps}: {a} vs masked_cross_entropy {c}");
}

#[test]
fn ex09_label_smoothing_closed_form_on_one_row() {
    // One row, V = 4, label 2: (1 − ε)(−log p₂) + ε · mean(−log p).
    let logits = Tensor::from_slice(&[1.0f32, 2.0, 0.5, -1.0]).view([1, 4]);
    let labels = Tensor::from_slice(&[2i64]);
    let logp: Vec<f64> = Vec::try_from(&logits.log_softmax(-1, Kind::Double).view([-1])).unwrap();
    let eps = 0.2;
    let expected = (1.0 - eps) * -logp[2] + eps * -(logp.iter().sum::<f64>() / 4.0);
    let got = label_smoothed_loss(&logits, &labels, eps).double_value(&[]);
    assert!((got - expected).abs() < 1e-5, "{got} vs {expected}");
}

#[test]
fn ex09_label_smoothing_gradients_match_libtorch() {
    let (logits, labels) = logits_and_labels(3);
    let a = logits.copy().set_requires_grad(true);
    let b = logits.copy().set_requires_grad(true);
    label_smoothed_loss(&a, &labels, 0.1).backward();
    b.cross_entropy_loss::<Tensor>(&labels, None, Reduction::Mean, PAD_ID, 0.1).backward();
    let d = (a.grad() - b.grad()).abs().max().double_value(&[]);
    assert!(d < 1e-6, "gradients differ by {d:e}");
    // PAD rows get no gradient at all.
    assert_eq!(a.grad().get(1).abs().sum(Kind::Float).double_value(&[]), 0.0);
}

#[rstest]
fn ex09_smoothing_floor_is_the_minimum(#[values(0.05, 0.1, 0.4)] eps: f64) {
    let v = 13;
    let floor = smoothed_loss_floor(eps, v);
    // Logits equal to the log of the smoothed target reach it ...
    let on = 1.0 - eps + eps / v as f64;
    let target = Tensor::full([1, v], eps / v as f64, (Kind::Double, Device::Cpu));
    let _ = target.get(0).get(4).fill_(on);
    let labels = Tensor::from_slice(&[4i64]);
    let at_target = target.log().cross_entropy_loss::<Tensor>(&labels, None, Reduction::Mean, -100, eps).double_value(&[]);
    assert!((at_target - floor).abs() < 1e-9, "floor {floor} but the loss at the target is {at_target}");
    // ... and nothing does better.
    tch::manual_seed(0);
    for _ in 0..20 {
        let logits = target.log() + Tensor::randn([1, v], (Kind::Double, Device::Cpu)) * 0.5;
        let l = logits.cross_entropy_loss::<Tensor>(&labels, None, Reduction::Mean, -100, eps).double_value(&[]);
        assert!(l >= floor - 1e-12, "{l} < floor {floor}");
    }
    let sharp = Tensor::full([1, v], -30.0, (Kind::Double, Device::Cpu));
    let _ = sharp.get(0).get(4).fill_(30.0);
    assert!(sharp.cross_entropy_loss::<Tensor>(&labels, None, Reduction::Mean, -100, eps).double_value(&[]) > floor);
}

#[test]
fn ex09_smoothing_floor_without_smoothing_is_zero() {
    assert_eq!(smoothed_loss_floor(0.0, 13), 0.0);
    assert!((smoothed_loss_floor(1.0, 13) - 13f64.ln()).abs() < 1e-12, "ε = 1 is the uniform target: ln V");
}

#[rstest]
#[case(1.0, 0.0, 10, 100)]
#[case(3e-3, 1e-4, 1000, 5000)]
#[case(1.0, 0.5, 4, 6)]
fn ex09_cosine_shape(#[case] peak: f64, #[case] min_lr: f64, #[case] warmup: usize, #[case] total: usize) {
    let lr = |s| warmup_cosine_lr(s, peak, min_lr, warmup, total);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * peak.max(1.0);
    assert!(close(lr(1), peak / warmup as f64), "first step: peak/warmup");
    assert!(close(lr(warmup), peak), "the peak at step = warmup");
    for s in 1..warmup {
        assert!(close(lr(s + 1) - lr(s), peak / warmup as f64), "warmup is linear");
    }
    for s in warmup..total {
        assert!(lr(s + 1) < lr(s), "must decrease after the warmup (step {s})");
    }
    assert!(close(lr(total), min_lr) && close(lr(total + 50), min_lr), "min_lr at and after total");
    if (total - warmup).is_multiple_of(2) {
        assert!(close(lr(warmup + (total - warmup) / 2), (peak + min_lr) / 2.0), "halfway down at the midpoint");
    }
    let quarter = warmup as f64 + (total - warmup) as f64 / 4.0;
    if quarter.fract() == 0.0 {
        let expected = min_lr + (peak - min_lr) * (1.0 + std::f64::consts::FRAC_1_SQRT_2) / 2.0;
        assert!(close(lr(quarter as usize), expected), "a cosine, not a straight line");
    }
}
