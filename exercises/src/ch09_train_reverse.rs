//! Chapter 09 exercises — the loss, the schedule, and a length never seen.
//! Check with `cargo test --test exercises_ch09`.
use std::ops::RangeInclusive;

use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

use transformer_course::data::{digit_sequences, encode_pair, ReverseDataset};
use transformer_course::generate::{
    correct_rows, two_rates_p_value, wilson_interval,
};
use transformer_course::train::{fit, Learner, TrainOptions};
use transformer_course::transformer::Transformer;
use transformer_course::vocab::{PAD_ID, SEQ_LEN};

/// ★ ex09_label_smoothing — label smoothing written out. The target of a label
/// y over V classes becomes (1 − ε)·onehot(y) + ε/V (every class, y included,
/// gets ε/V), and the loss is the cross-entropy against that distribution.
/// logits: [N, V] (any float kind), labels: [N]. Returns the mean over the
/// labels that are not PAD, as an fp32 scalar tensor that gradients flow
/// through — the same number as `cross_entropy_loss(.., ignore_index = PAD_ID,
/// label_smoothing = ε)`.
pub fn label_smoothed_loss(
    logits: &Tensor,
    labels: &Tensor,
    eps: f64,
) -> Tensor {
    // ANCHOR: ex09_label_smoothing
    // HINT: expand −Σ_v q_v·log p_v for this target q: one term is the usual
    // HINT: loss of the label, the other the mean over all classes. Work with
    // HINT: fp32 log-probabilities, and average over the non-PAD rows only,
    // HINT: with tensor operations all the way, so that gradients reach the
    // HINT: logits.
    let logp = logits.log_softmax(-1, Kind::Float); // [N, V]
    let picked = logp.gather(1, &labels.unsqueeze(1), false); // [N, 1]
    let nll = -picked.squeeze_dim(1); // [N]
    let uniform = -logp.mean_dim(-1, false, Kind::Float); // [N]
    let per_row = nll * (1.0 - eps) + uniform * eps;
    per_row.masked_select(&labels.ne(PAD_ID)).mean(Kind::Float)
    // ANCHOR_END: ex09_label_smoothing
}

/// ★ ex09_smoothing_floor — with ε > 0 the loss can never reach 0: its minimum
/// over all logits is the entropy of the smoothed target itself, reached when
/// the softmax equals that target. Return that floor (in nats) for smoothing
/// `eps` and `v` classes.
pub fn smoothed_loss_floor(eps: f64, v: i64) -> f64 {
    // ANCHOR: ex09_smoothing_floor
    // HINT: write the smoothed target out: how much does it put on the label,
    // HINT: how much on each of the others? Its entropy −Σ q·ln q is the
    // HINT: answer; a class with q = 0 contributes 0 (the limit of q·ln q).
    let plogp = |p: f64| if p > 0.0 { p * p.ln() } else { 0.0 };
    let (on, off) = (1.0 - eps + eps / v as f64, eps / v as f64);
    -(plogp(on) + (v - 1) as f64 * plogp(off))
    // ANCHOR_END: ex09_smoothing_floor
}

/// ★ ex09_cosine — the schedule most models use today instead of the paper's: a
/// linear warmup to `peak` over `warmup` steps, then half a cosine down to
/// `min_lr` at step `total`, and `min_lr` after that. Steps count from 1, as in
/// `noam_lr`: lr(s) = peak·s/warmup for s ≤ warmup;
/// lr(s) = min_lr + ½(peak − min_lr)(1 + cos(π·(s − warmup)/(total − warmup)))
/// for warmup < s < total; lr(s) = min_lr for s ≥ total. Assumes 1 ≤ warmup <
/// total.
pub fn warmup_cosine_lr(
    step: usize,
    peak: f64,
    min_lr: f64,
    warmup: usize,
    total: usize,
) -> f64 {
    // ANCHOR: ex09_cosine
    // HINT: three cases; in the middle one,
    // HINT: t = (step − warmup)/(total − warmup) runs from 0 to 1
    // HINT: and ½(1 + cos πt) runs from 1 to 0.
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        min_lr
            + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos())
    }
    // ANCHOR_END: ex09_cosine
}

/// ★★★ ex09_unseen_length — a length the model never saw. Chapter 09 trains
/// on every length from 3 to 12 and chapter 10 tests on the same lengths. Does
/// the model reverse a length that training left out, as well as the lengths
/// it saw? Three pieces, which `exercise_experiments unseen-length` puts
/// together with chapter 09's own `Trainer` and `fit`.
///
/// First, the training: draw `opts.n_train` samples from `opts.data_seed`
/// whose lengths are uniform over `lengths` except `held_out` (digits uniform
/// in 0–9, laid out as chapter 08 does), and a validation set of `opts.n_val`
/// the same way from `opts.data_seed + 1`; train `learner` on them with
/// chapter 09's `fit` for `opts.epochs`. Returns the training set, so that the
/// scoring can leave out what was trained on.
pub fn train_without_length(
    learner: &mut dyn Learner,
    opts: &TrainOptions,
    lengths: RangeInclusive<usize>,
    held_out: usize,
) -> Result<ReverseDataset> {
    // ANCHOR: ex09_unseen_length_train
    // HINT: the lengths to draw from are `lengths` without `held_out`. For each
    // HINT: sample, pick one of them and that many digits from a seeded ChaCha8Rng;
    // HINT: `encode_pair` lays the sample out. Stack the rows into the
    // HINT: [N, SEQ_LEN] tensors of a `ReverseDataset`, then `fit(learner, ..)`.
    let kept: Vec<usize> = lengths.filter(|&n| n != held_out).collect();
    let draw = |n: usize, seed: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut src, mut tgt) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let len = kept[rng.random_range(0..kept.len())];
            let digits: Vec<i64> =
                (0..len).map(|_| rng.random_range(0..10)).collect();
            let (s, t) = encode_pair(&digits);
            src.extend_from_slice(&s);
            tgt.extend_from_slice(&t);
        }
        let shape = [n as i64, SEQ_LEN as i64];
        ReverseDataset {
            src: Tensor::from_slice(&src).view(shape),
            tgt: Tensor::from_slice(&tgt).view(shape),
        }
    };
    let train = draw(opts.n_train, opts.data_seed);
    let val = draw(opts.n_val, opts.data_seed.wrapping_add(1));
    fit(learner, &train, &val, opts, &mut ())?;
    Ok(train)
    // ANCHOR_END: ex09_unseen_length_train
}

/// How a model did on one length.
#[derive(Debug, Clone)]
pub struct LengthScore {
    pub len: usize,
    /// The digit sequences scored, each `len` long.
    pub scored: Vec<Vec<i64>>,
    /// How many of them greedy decoding reversed exactly (chapter 10's exact
    /// match: the digits, then EOS).
    pub right: usize,
}

/// Second, the scoring: `n` different digit sequences of exactly `len` digits,
/// drawn from `seed`, none of which is in `trained_on`; decode each greedily
/// and count the exact matches. Assumes that at least `n` such sequences exist.
pub fn score_length(
    model: &Transformer,
    len: usize,
    n: usize,
    seed: u64,
    trained_on: &ReverseDataset,
) -> LengthScore {
    // ANCHOR: ex09_unseen_length_score
    // HINT: `digit_sequences(trained_on)` is what to skip; a HashSet of what you
    // HINT: already drew keeps the n different. Lay them out with `encode_pair`
    // HINT: and let chapter 10's `correct_rows` decode and judge them.
    let mut skip = digit_sequences(trained_on);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scored = Vec::with_capacity(n);
    while scored.len() < n {
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if skip.insert(digits.clone()) {
            scored.push(digits);
        }
    }
    let (src, tgt): (Vec<_>, Vec<_>) =
        scored.iter().map(|d| encode_pair(d)).unzip();
    let shape = [n as i64, SEQ_LEN as i64];
    let src = Tensor::from_slice(&src.concat()).view(shape);
    let tgt = Tensor::from_slice(&tgt.concat()).view(shape);
    let right = correct_rows(model, &src, &tgt, 500)
        .into_iter()
        .filter(|&r| r)
        .count();
    LengthScore { len, scored, right }
    // ANCHOR_END: ex09_unseen_length_score
}

/// What the held-out length's score says against the seen lengths'.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthVerdict {
    /// (right, rows) at the held-out length.
    pub held_out: (usize, usize),
    /// (right, rows) over all the seen lengths together.
    pub seen: (usize, usize),
    /// 95 % Wilson intervals of the two rates.
    pub held_out_interval: (f64, f64),
    pub seen_interval: (f64, f64),
    /// Two-sided p of a direct test of the two rates.
    pub p: f64,
}

/// Third, the comparison: the held-out length's score against the seen
/// lengths' scores pooled. The two are different samples, drawn independently.
/// Panics if a "seen" score has the held-out length.
pub fn compare_lengths(
    held_out: &LengthScore,
    seen: &[LengthScore],
) -> LengthVerdict {
    // ANCHOR: ex09_unseen_length_compare
    // HINT: pool the seen scores into one (right, rows). Independent samples
    // HINT: with no row in common: which of the course's tests in
    // HINT: `transformer_course::generate` fits, and does it want hits or misses?
    assert!(
        seen.iter().all(|s| s.len != held_out.len),
        "a seen score has the held-out length {}",
        held_out.len
    );
    let h = (held_out.right, held_out.scored.len());
    let s = seen
        .iter()
        .fold((0, 0), |(r, n), x| (r + x.right, n + x.scored.len()));
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: wilson_interval(h.0, h.1),
        seen_interval: wilson_interval(s.0, s.1),
        p: two_rates_p_value((h.1 - h.0, h.1), (s.1 - s.0, s.1)),
    }
    // ANCHOR_END: ex09_unseen_length_compare
}
