//! Chapter 09 exercises: `cargo test --test exercises_ch09`.
mod common;

use common::{assert_close, assert_close_f64, seeded};
use exercises::ch09_train_reverse::{
    label_smoothed_loss, smoothed_loss_floor, warmup_cosine_lr,
};
use rstest::rstest;
use tch::{Device, Kind, Reduction, Tensor};
use transformer_course::train::masked_cross_entropy;
use transformer_course::vocab::PAD_ID;

fn logits_and_labels(seed: i64) -> (Tensor, Tensor) {
    let logits = common::randn(seed, &[6, 13]) * 3.0;
    let labels = Tensor::from_slice(&[5i64, PAD_ID, 12, 3, PAD_ID, 1]);
    (logits, labels)
}

fn libtorch_loss(logits: &Tensor, labels: &Tensor, eps: f64) -> Tensor {
    logits.cross_entropy_loss::<Tensor>(
        labels,
        None,
        Reduction::Mean,
        PAD_ID,
        eps,
    )
}

#[rstest]
fn ex09_label_smoothing_matches_libtorch(
    #[values(0.0, 0.1, 0.3)] eps: f64,
    #[values(0, 1)] seed: i64,
) {
    let (logits, labels) = logits_and_labels(seed);
    let mine = label_smoothed_loss(&logits, &labels, eps);
    assert_eq!(
        mine.numel(),
        1,
        "the loss is one number, got shape {:?}",
        mine.size()
    );
    assert_eq!(mine.kind(), Kind::Float, "the loss is fp32");
    let what = format!(
        "ε = {eps}: (1 − ε)·(−log p_y) + ε·mean_v(−log p_v), averaged over the non-PAD rows \
         only (every class gets ε/V, the label too)"
    );
    assert_close(&mine, &libtorch_loss(&logits, &labels, eps), 1e-5, &what);
    let course =
        masked_cross_entropy(&logits.unsqueeze(0), &labels.unsqueeze(0), eps);
    assert_close(&mine, &course, 1e-5, &what);
}

#[test]
fn ex09_label_smoothing_of_bf16_logits_is_computed_in_fp32() {
    let (logits, labels) = logits_and_labels(2);
    let half = logits.to_kind(Kind::BFloat16);
    let mine = label_smoothed_loss(&half, &labels, 0.1);
    assert_eq!(
        mine.kind(),
        Kind::Float,
        "the loss is fp32, whatever the logits' kind"
    );
    let want = libtorch_loss(&half.to_kind(Kind::Float), &labels, 0.1);
    assert_close(
        &mine,
        &want,
        1e-5,
        "bf16 logits: take the log-softmax in fp32 (log_softmax(-1, Kind::Float)), not in \
         bf16, which keeps only 2–3 significant digits",
    );
}

#[test]
fn ex09_label_smoothing_closed_form_on_one_row() {
    // One row, V = 4, label 2: (1 − ε)(−log p₂) + ε · mean(−log p).
    let logits = Tensor::from_slice(&[1.0f32, 2.0, 0.5, -1.0]).view([1, 4]);
    let labels = Tensor::from_slice(&[2i64]);
    let logp: Vec<f64> =
        Vec::try_from(&logits.log_softmax(-1, Kind::Double).view([-1]))
            .unwrap();
    let eps = 0.2;
    let expected =
        (1.0 - eps) * -logp[2] + eps * -(logp.iter().sum::<f64>() / 4.0);
    let got = label_smoothed_loss(&logits, &labels, eps).double_value(&[]);
    assert_close_f64(got, expected, 1e-5, "one row, V = 4, label 2, ε = 0.2");
}

#[test]
fn ex09_label_smoothing_gradients_match_libtorch() {
    let (logits, labels) = logits_and_labels(3);
    let a = logits.copy().set_requires_grad(true);
    let b = logits.copy().set_requires_grad(true);
    let loss = label_smoothed_loss(&a, &labels, 0.1);
    assert!(
        loss.requires_grad(),
        "no gradient flows through the loss: keep it a tensor computation"
    );
    loss.backward();
    libtorch_loss(&b, &labels, 0.1).backward();
    assert_close(
        &a.grad(),
        &b.grad(),
        1e-6,
        "the gradients differ from cross_entropy_loss's",
    );
    let pad_grad = a.grad().get(1).abs().sum(Kind::Float).double_value(&[]);
    assert_eq!(
        pad_grad, 0.0,
        "a PAD row got a gradient: leave PAD rows out of the mean"
    );
}

#[rstest]
fn ex09_smoothing_floor_is_the_minimum(
    #[values(0.05, 0.1, 0.4)] eps: f64,
    #[values(2, 13, 1000)] v: i64,
) {
    let floor = smoothed_loss_floor(eps, v);
    // Logits equal to the log of the smoothed target reach it ...
    let on = 1.0 - eps + eps / v as f64;
    let label = 4.min(v - 1);
    let target =
        Tensor::full([1, v], eps / v as f64, (Kind::Double, Device::Cpu));
    let _ = target.get(0).get(label).fill_(on);
    let labels = Tensor::from_slice(&[label]);
    let loss = |logits: &Tensor| {
        logits
            .cross_entropy_loss::<Tensor>(
                &labels,
                None,
                Reduction::Mean,
                -100,
                eps,
            )
            .double_value(&[])
    };
    assert_close_f64(
        floor,
        loss(&target.log()),
        1e-9,
        &format!(
            "ε = {eps}, V = {v}: the loss at logits = log(target) is the floor; the target \
             puts 1 − ε + ε/V on the label and ε/V on each of the V − 1 other classes, and \
             the floor is its entropy in nats"
        ),
    );
    // ... and nothing does better.
    let noise = seeded(0, || {
        Tensor::randn([20, v], (Kind::Double, Device::Cpu)) * 0.5
    });
    for i in 0..20 {
        let l = loss(&(target.log() + noise.get(i).unsqueeze(0)));
        assert!(
            l >= floor - 1e-12,
            "a loss of {l} lies below your floor {floor}"
        );
    }
    let sharp = Tensor::full([1, v], -30.0, (Kind::Double, Device::Cpu));
    let _ = sharp.get(0).get(label).fill_(30.0);
    assert!(
        loss(&sharp) > floor,
        "a confident one-hot prediction is not optimal under smoothing"
    );
}

#[test]
fn ex09_smoothing_floor_without_smoothing_is_zero() {
    assert_eq!(
        smoothed_loss_floor(0.0, 13),
        0.0,
        "ε = 0: a one-hot target has entropy 0 (0·ln 0 = 0)"
    );
    for v in [2, 13, 1000] {
        assert_close_f64(
            smoothed_loss_floor(1.0, v),
            (v as f64).ln(),
            1e-12,
            &format!("ε = 1 is the uniform target over V = {v} classes: ln V"),
        );
    }
}

#[rstest]
#[case(1.0, 0.0, 10, 100)]
#[case(3e-3, 1e-4, 1000, 5000)]
#[case(1.0, 0.5, 4, 6)]
#[case(2.0, 0.1, 1, 3)]
fn ex09_cosine_shape(
    #[case] peak: f64,
    #[case] min_lr: f64,
    #[case] warmup: usize,
    #[case] total: usize,
) {
    let lr = |s| warmup_cosine_lr(s, peak, min_lr, warmup, total);
    let tol = 1e-12 * peak.max(1.0);
    let close = |a: f64, b: f64, what: &str| assert_close_f64(a, b, tol, what);
    close(
        lr(1),
        peak / warmup as f64,
        "step 1 (steps count from 1): peak/warmup",
    );
    close(lr(warmup), peak, "the peak is reached at step = warmup");
    for s in 1..warmup {
        close(
            lr(s + 1) - lr(s),
            peak / warmup as f64,
            "the warmup rises linearly, by peak/warmup a step",
        );
    }
    for s in warmup..total {
        assert!(
            lr(s + 1) < lr(s),
            "after the warmup the rate must decrease (step {s} → {})",
            s + 1
        );
    }
    close(lr(total), min_lr, "min_lr at step total");
    close(lr(total + 50), min_lr, "min_lr after total");
    close(lr(10 * total), min_lr, "min_lr long after total");
    // Between the turning points, step by step: the cosine of the statement.
    for s in warmup..=total {
        let t = (s - warmup) as f64 / (total - warmup) as f64;
        let want = min_lr
            + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos());
        close(
            lr(s),
            want,
            &format!(
                "step {s} of the decay (warmup {warmup}, total {total}): \
                 min_lr + ½(peak − min_lr)(1 + cos πt) with t = (step − warmup)/(total − warmup)"
            ),
        );
    }
    if (total - warmup).is_multiple_of(2) {
        let mid = warmup + (total - warmup) / 2;
        close(
            lr(mid),
            (peak + min_lr) / 2.0,
            "halfway down at the midpoint: t runs over total − warmup steps",
        );
    }
    let quarter = warmup as f64 + (total - warmup) as f64 / 4.0;
    if quarter.fract() == 0.0 {
        let expected = min_lr
            + (peak - min_lr) * (1.0 + std::f64::consts::FRAC_1_SQRT_2) / 2.0;
        close(
            lr(quarter as usize),
            expected,
            "a quarter of the way down: a cosine, not a straight line",
        );
    }
}

#[test]
fn ex09_label_smoothing_is_written_by_hand() {
    let why = "take log_softmax of the logits, and mix the label's −log p with the mean \
               −log p over all classes yourself, (1 − ε) and ε; leave out the PAD rows";
    common::assert_written_by_hand(
        include_str!("../src/ch09_train_reverse.rs"),
        "ex09_label_smoothing",
        &[
            ("cross_entropy_loss", why),
            ("masked_cross_entropy", why),
            ("cross_entropy", why),
        ],
    );
}
