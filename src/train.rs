//! Chapter 09 — training: teacher forcing, a loss that ignores PAD, Adam with
//! the warmup schedule, and the loop.
//!
//! Everything here is the algorithm. Where the step runs (CPU or GPU), in which
//! precision, with which implementation of Adam and whether as a CUDA graph is
//! the engine's business (`workbench/src/engine.rs`), which wraps a [`Trainer`]
//! without changing what its step computes.
use std::ops::ControlFlow;

use anyhow::Result;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Reduction, Tensor};

use crate::config::TransformerConfig;
use crate::data::{epoch_batches, make_dataset, ReverseDataset};
use crate::generate::exact_match;
use crate::transformer::Transformer;
use crate::vocab::PAD_ID;

// ANCHOR: schedule
/// lr = d^-½ · min(step^-½, step · warmup^-1.5), with `step` counted from 1: a
/// linear rise for `warmup` steps, then decay as 1/√step. The peak, at step =
/// warmup, is (d · warmup)^-½ ≈ 2.80e-3 for d = 128 and warmup = 1000.
pub fn noam_lr(step: usize, d_model: i64, warmup: usize) -> f64 {
    let s = step.max(1) as f64;
    let rise = s * (warmup as f64).powf(-1.5);
    (d_model as f64).powf(-0.5) * s.powf(-0.5).min(rise)
}
// ANCHOR_END: schedule

// ANCHOR: teacher_forcing
/// tgt: [B, L] → (decoder input tgt[:, :-1], labels tgt[:, 1:]), both [B, L-1].
/// Each position sees the true prefix and is asked for the next token; with the
/// causal mask, one forward pass trains every position at once.
pub fn teacher_forcing(tgt: &Tensor) -> (Tensor, Tensor) {
    let l = tgt.size()[1];
    (tgt.narrow(1, 0, l - 1), tgt.narrow(1, 1, l - 1))
}
// ANCHOR_END: teacher_forcing

#[counted::counted]
// ANCHOR: loss
/// Mean cross-entropy over the non-PAD labels, computed in fp32 even when the
/// logits came out of bf16 autocast.
pub fn masked_cross_entropy(
    logits: &Tensor,
    labels: &Tensor,
    label_smoothing: f64,
) -> Tensor {
    let v = logits.size()[2];
    let logits = logits.reshape([-1, v]).to_kind(Kind::Float); // [B·L, V]
    logits.cross_entropy_loss::<Tensor>(
        &labels.reshape([-1]), // [B·L]
        None,
        Reduction::Mean,
        PAD_ID, // these positions contribute neither loss nor gradient
        label_smoothing,
    )
}

/// Share of non-PAD labels whose argmax prediction is right (teacher forcing),
/// as a scalar tensor: it stays on the device until someone reads it.
pub fn token_accuracy(logits: &Tensor, labels: &Tensor) -> Tensor {
    tch::no_grad(|| {
        let real = labels.ne(PAD_ID);
        let hits = logits.argmax(-1, false).eq_tensor(labels);
        let hits = hits.logical_and(&real).sum(Kind::Float);
        hits / real.sum(Kind::Float)
    })
}
// ANCHOR_END: loss

// ANCHOR: adam
/// Adam with the paper's settings. The learning rate is not among them: the
/// schedule sets it before every step.
pub const ADAM: nn::Adam = nn::Adam {
    beta1: 0.9,
    beta2: 0.98,
    eps: 1e-9,
    wd: 0.0, // no weight decay
    amsgrad: false,
};

/// The three calls a training step makes of its optimiser. tch's Adam is one
/// implementation; the training program can put another in its place
/// (libtorch's fused Adam kernel, `workbench/src/optim.rs`) that computes the
/// same update.
pub trait Optimizer {
    fn set_lr(&mut self, lr: f64);
    fn zero_grad(&mut self);
    fn step(&mut self);
}

impl Optimizer for nn::Optimizer {
    fn set_lr(&mut self, lr: f64) {
        nn::Optimizer::set_lr(self, lr)
    }
    fn zero_grad(&mut self) {
        nn::Optimizer::zero_grad(self)
    }
    fn step(&mut self) {
        nn::Optimizer::step(self)
    }
}
// ANCHOR_END: adam

/// The training recipe: its seeds, sizes and numbers, in one place. The programs
/// take epochs and seeds from the command line; chapter 10 reads the data seeds
/// from here.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub epochs: usize,
    /// Seeds the weights, the dropout masks and the shuffling.
    pub seed: u64,
    /// Seeds the data: training set `data_seed`, validation set `data_seed + 1`.
    /// Kept apart from `seed` so that runs with different seeds are scored on the
    /// same samples.
    pub data_seed: u64,
    pub n_train: usize,
    pub n_val: usize,
    pub batch_size: usize,
    pub warmup: usize,
    /// Validation samples decoded after each epoch (the final check uses all).
    pub eval_samples: usize,
    /// Rows decoded at once when scoring exact match.
    pub eval_batch: i64,
    pub label_smoothing: f64,
}

/// The default model seed. Seeds 0-4 on the same data ended at 0.994, 0.996,
/// 0.998, 0.999 and 1.000 exact match on a 2-core Intel CPU
/// (`scripts/seed-spread.sh`); the default is the median run, seed 2, not the
/// best one.
pub const DEFAULT_SEED: u64 = 2;

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 10,
            seed: DEFAULT_SEED,
            data_seed: 0,
            n_train: 20_000,
            n_val: 1_000,
            batch_size: 64,
            warmup: 1000,
            eval_samples: 500,
            eval_batch: 500,
            label_smoothing: 0.0,
        }
    }
}

/// The data sets of the recipe: training seed `data_seed`, validation seed
/// `data_seed + 1`.
pub fn reverse_data(opts: &TrainOptions) -> (ReverseDataset, ReverseDataset) {
    let val_seed = opts.data_seed.wrapping_add(1);
    (
        make_dataset(opts.n_train, opts.data_seed),
        make_dataset(opts.n_val, val_seed),
    )
}

// ANCHOR: trainer
/// What a training step asks of its model: logits [B, T, V] for a source
/// [B, S] and a decoder input [B, T], with dropout on when `train`.
pub trait Seq2Seq {
    fn forward(&self, src: &Tensor, tgt_in: &Tensor, train: bool) -> Tensor;
}

/// What training keeps from one step to the next. `M` is the model: the
/// course's `Transformer` unless said otherwise. Chapter 13's study says
/// otherwise, so that each of its variants trains by this very step.
pub struct Trainer<M = Transformer> {
    pub vs: nn::VarStore, // the model's weights
    pub model: M,
    pub opt: Box<dyn Optimizer>, // Adam
    pub step: usize,             // steps taken; the schedule reads it
    pub warmup: usize,
    pub label_smoothing: f64,
}

impl<M: Seq2Seq> Trainer<M> {
    /// One optimiser step on a batch: src [B, S], tgt [B, T]. Returns the loss
    /// and the logits [B, T-1, V], still tensors: nothing is read back yet.
    pub fn train_step(
        &mut self,
        src: &Tensor,
        tgt: &Tensor,
    ) -> (Tensor, Tensor) {
        let (tgt_in, tgt_out) = teacher_forcing(tgt);
        let logits = self.model.forward(src, &tgt_in, true); // dropout on
        let loss =
            masked_cross_entropy(&logits, &tgt_out, self.label_smoothing);
        self.opt.zero_grad(); // gradients add up unless cleared
        loss.backward(); // d loss / d every weight, by autograd
        self.opt.step(); // Adam moves every weight against its gradient
        (loss, logits)
    }
}

impl Trainer {
    /// Counts the next step and gives the optimiser its learning rate.
    pub fn advance_schedule(&mut self) {
        self.step += 1;
        self.opt.set_lr(self.lr_at(self.step));
    }

    /// The learning rate of step `step` (counted from 1).
    pub fn lr_at(&self, step: usize) -> f64 {
        noam_lr(step, self.model.config.d_model, self.warmup)
    }
}
// ANCHOR_END: trainer

impl Seq2Seq for Transformer {
    fn forward(&self, src: &Tensor, tgt_in: &Tensor, train: bool) -> Tensor {
        Transformer::forward(self, src, tgt_in, train) // the inherent one
    }
}

// ANCHOR: trainer_new
impl Trainer {
    /// A new model with its weights on `device`, and Adam over all of them.
    pub fn new(
        config: TransformerConfig,
        device: Device,
        opts: &TrainOptions,
    ) -> Result<Self> {
        tch::manual_seed(opts.seed as i64); // weights and dropout masks
        let vs = nn::VarStore::new(device);
        let model = Transformer::new(vs.root(), config)?;
        let opt = ADAM.build(&vs, 0.0)?; // lr: set by the schedule
        Ok(Trainer {
            vs,
            model,
            opt: Box::new(opt),
            step: 0,
            warmup: opts.warmup,
            label_smoothing: opts.label_smoothing,
        })
    }
}
// ANCHOR_END: trainer_new

// ANCHOR: learner
/// A training step as `fit` sees it: the schedule, the step, and the loss and
/// token accuracy read back. `Trainer` is the plain one; the engine's wrappers
/// (`engine` and `graph` in workbench/src/) run the same `train_step` on a
/// device, in bf16 or as a CUDA graph.
pub trait Learner {
    fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> Result<(f64, f64)>;
    fn trainer(&self) -> &Trainer;
}

impl Learner for Trainer {
    fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> Result<(f64, f64)> {
        self.advance_schedule();
        let (loss, logits) = self.train_step(src, tgt);
        let acc = token_accuracy(&logits, &teacher_forcing(tgt).1);
        Ok((loss.double_value(&[]), acc.double_value(&[])))
    }

    fn trainer(&self) -> &Trainer {
        self
    }
}
// ANCHOR_END: learner

/// One line of the training log.
#[derive(Debug, Clone, Copy)]
pub struct EpochReport {
    pub epoch: usize,
    /// Loss and token accuracy of the epoch's last batch.
    pub loss: f64,
    pub token_acc: f64,
    pub val_exact_match: f64,
    /// The rate the next step will use.
    pub lr: f64,
}

impl std::fmt::Display for EpochReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "epoch {:2}  loss={:.4}  token_acc={:.4}  val_exact_match={:.3}  lr={:.2e}",
            self.epoch, self.loss, self.token_acc, self.val_exact_match, self.lr,
        )
    }
}

/// What a training run leaves behind: one report per epoch, and the loss of
/// every step.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub epochs: Vec<EpochReport>,
    pub step_losses: Vec<f64>,
}

/// What `fit` tells its caller as it goes. Both calls do nothing unless the
/// caller says otherwise; either may stop the run (`ControlFlow::Break`).
pub trait Observer {
    fn on_step(
        &mut self,
        _epoch: usize,
        _batch: usize,
        _of: usize,
        _loss: f64,
    ) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn on_epoch(&mut self, _report: &EpochReport) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Nothing to tell.
impl Observer for () {}

// ANCHOR: fit
/// Trains for `opts.epochs`, scoring exact match after each epoch.
pub fn fit(
    learner: &mut dyn Learner,
    train: &ReverseDataset,
    val: &ReverseDataset,
    opts: &TrainOptions,
    observer: &mut dyn Observer,
) -> Result<History> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed); // the batch order
    let quick = val.first(opts.eval_samples); // the per-epoch check
    let mut history = History::default();
    for epoch in 1..=opts.epochs {
        let batches = epoch_batches(train.len(), opts.batch_size, &mut rng);
        let (mut loss, mut acc) = (f64::NAN, f64::NAN);
        for (i, idx) in batches.iter().enumerate() {
            let src = train.src.index_select(0, idx); // [B, S]
            let tgt = train.tgt.index_select(0, idx); // [B, T]
            (loss, acc) = learner.learn(&src, &tgt)?;
            history.step_losses.push(loss);
            let go_on = observer.on_step(epoch, i + 1, batches.len(), loss);
            if go_on.is_break() {
                return Ok(history); // stopped early
            }
        }
        let t = learner.trainer();
        let em = exact_match(&t.model, &quick.src, &quick.tgt, opts.eval_batch);
        let report = EpochReport {
            epoch,
            loss,
            token_acc: acc,
            val_exact_match: em,
            lr: t.lr_at(t.step + 1),
        };
        history.epochs.push(report);
        if observer.on_epoch(&report).is_break() {
            break; // stopped after this epoch
        }
    }
    Ok(history)
}
// ANCHOR_END: fit

// ANCHOR: test_data
/// Samples in the test set of chapter 10.
pub const TEST_SAMPLES: usize = 5_000;

/// The test set of chapter 10, the third data set of the recipe: `n` samples
/// drawn from seed `data_seed + 2`, a stream independent of the other two, and
/// skipping every digit sequence of the training and the validation set. No
/// test sequence was trained on, and none took part in any choice made with the
/// validation set (such as the default seed), by construction.
pub fn test_data(
    opts: &TrainOptions,
    train: &ReverseDataset,
    val: &ReverseDataset,
    n: usize,
) -> ReverseDataset {
    let mut exclude = crate::data::digit_sequences(train);
    exclude.extend(crate::data::digit_sequences(val));
    let seed = opts.data_seed.wrapping_add(2);
    crate::data::make_dataset_excluding(n, seed, &exclude)
}
// ANCHOR_END: test_data
