//! Chapter 09 — training: teacher forcing, the warmup schedule, a loss that ignores
//! PAD, and bf16 autocast on CUDA.
use std::time::Instant;

use anyhow::Result;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::nn;
use tch::{Device, Kind, Reduction, Tensor};

use crate::config::TransformerConfig;
use crate::data::{epoch_batches, make_dataset, ReverseDataset};
use crate::generate::exact_match;
use crate::graph::GraphedStep;
use crate::optim::{Adam, AdamHyper, Optimizer};
use crate::transformer::Transformer;
use crate::vocab::PAD_ID;

// ANCHOR: precision
/// Turns on the CUDA precision recipe: bf16 autocast for the forward pass and TF32
/// for the fp32 matrix products that remain. Returns a label for the logs.
pub fn configure_precision(device: Device) -> Result<&'static str> {
    if device.is_cuda() {
        crate::sys::set_cuda_autocast_bf16(true)?;
        crate::sys::set_allow_tf32(true)?;
        Ok("bf16 autocast + TF32")
    } else {
        Ok("fp32")
    }
}
// ANCHOR_END: precision

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

/// Share of non-PAD labels whose argmax prediction is right (teacher forcing).
pub fn token_accuracy(logits: &Tensor, labels: &Tensor) -> f64 {
    let real = labels.ne(PAD_ID);
    let hits = logits
        .argmax(-1, false)
        .eq_tensor(labels)
        .logical_and(&real);
    let count = |t: &Tensor| t.sum(Kind::Float).double_value(&[]);
    count(&hits) / count(&real)
}
// ANCHOR_END: loss

/// The training recipe. The chapter's binary exposes epochs, seeds and the init.
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
    pub label_smoothing: f64,
    /// Which Adam: libtorch's fused kernel (the default) or tch's `nn::Adam`.
    pub optimizer: Optimizer,
    /// None: the device's recipe (bf16 autocast on CUDA, fp32 on the CPU).
    pub precision: Option<Precision>,
    /// Capture the training step once as a CUDA graph and replay it (CUDA only).
    pub cuda_graph: bool,
}

/// The arithmetic of the forward pass. The loss is fp32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// Everything in fp32.
    Fp32,
    /// bf16 autocast: matrix products in bf16, the rest as autocast decides.
    Bf16,
}

impl Precision {
    /// The course's recipe: bf16 autocast on CUDA, fp32 on the CPU.
    pub fn recipe(device: Device) -> Precision {
        if device.is_cuda() {
            Precision::Bf16
        } else {
            Precision::Fp32
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
        }
    }

    /// Sets libtorch up for this precision on `device` (see
    /// [`configure_precision`]); returns the label for the logs.
    pub fn configure(self, device: Device) -> Result<&'static str> {
        match (self, device.is_cuda()) {
            (Precision::Bf16, true) | (Precision::Fp32, false) => {
                configure_precision(device)
            }
            (Precision::Bf16, false) => {
                crate::sys::set_cpu_autocast_bf16()?;
                Ok("bf16 autocast")
            }
            (Precision::Fp32, true) => anyhow::bail!(
                "--precision fp32 is CPU-only for now: the CUDA recipe is bf16 \
                 autocast + TF32 (leave --precision out on CUDA)"
            ),
        }
    }
}

/// The default model seed. Seeds 0-4 on the same data ended at 0.994, 0.996,
/// 0.998, 0.999 and 1.000 exact match on a 2-core CPU (`scripts/seed-spread.sh`);
/// the default is the median run, seed 2, not the best one.
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
            label_smoothing: 0.0,
            optimizer: Optimizer::Fused,
            precision: None,
            cuda_graph: false,
        }
    }
}

/// One line of the training log.
#[derive(Debug, Clone, Copy)]
pub struct EpochReport {
    pub epoch: usize,
    pub loss: f64,
    pub token_acc: f64,
    pub val_exact_match: f64,
    pub lr: f64,
    pub seconds: f64,
}

impl std::fmt::Display for EpochReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "epoch {:2}  loss={:.4}  token_acc={:.4}  val_exact_match={:.3}  lr={:.2e}  {:.0}s",
            self.epoch,
            self.loss,
            self.token_acc,
            self.val_exact_match,
            self.lr,
            self.seconds
        )
    }
}

// ANCHOR: trainer
/// The model, its optimizer and the step counter the schedule reads.
pub struct Trainer {
    pub vs: nn::VarStore,
    pub model: Transformer,
    pub opt: Adam,
    pub step: usize,
    pub device: Device,
    pub precision: Precision,
    warmup: usize,
    pub(crate) label_smoothing: f64,
    pub(crate) graph: Option<GraphedStep>, // --cuda-graph (src/graph.rs)
}

impl Trainer {
    pub fn new(
        config: TransformerConfig,
        device: Device,
        opts: &TrainOptions,
    ) -> Result<Self> {
        tch::manual_seed(opts.seed as i64); // weights and dropout masks
        let vs = nn::VarStore::new(device);
        let model = Transformer::new(vs.root(), config)?;
        let adam = AdamHyper {
            beta1: 0.9,
            beta2: 0.98,
            eps: 1e-9,
            weight_decay: 0.0,
        };
        // The schedule sets lr before every step.
        let mut opt = Adam::new(&vs, opts.optimizer, adam)?;
        let graph = if opts.cuda_graph {
            Some(GraphedStep::new(device, &mut opt)?)
        } else {
            None
        };
        Ok(Trainer {
            vs,
            model,
            opt,
            step: 0,
            device,
            precision: opts.precision.unwrap_or(Precision::recipe(device)),
            warmup: opts.warmup,
            label_smoothing: opts.label_smoothing,
            graph,
        })
    }

    /// One optimizer step on a batch; returns the loss and the token accuracy.
    pub fn train_step(&mut self, src: &Tensor, tgt: &Tensor) -> (f64, f64) {
        if self.graph.is_some() {
            return crate::graph::train_step(self, src, tgt); // replayed
        }
        let src = src.to_device(self.device);
        let (tgt_in, tgt_out) = teacher_forcing(&tgt.to_device(self.device));
        self.step += 1;
        self.opt.set_lr(self.lr_at(self.step));
        // bf16 autocast: the CUDA recipe, or --precision bf16 on the CPU.
        let bf16 = self.precision == Precision::Bf16;
        let logits = crate::sys::autocast_on(self.device, bf16, || {
            self.model.forward(&src, &tgt_in, true) // [B, L-1, V]
        });
        let loss =
            masked_cross_entropy(&logits, &tgt_out, self.label_smoothing);
        self.opt.zero_grad(); // gradients add up unless cleared
        loss.backward(); // d loss / d every weight, by autograd
        self.opt.step(); // Adam moves every weight against its gradient
        tch::no_grad(|| {
            let acc = token_accuracy(&logits, &tgt_out);
            (loss.double_value(&[]), acc)
        })
    }

    /// The learning rate of step `step` (counted from 1).
    pub fn lr_at(&self, step: usize) -> f64 {
        noam_lr(step, self.model.config.d_model, self.warmup)
    }
}
// ANCHOR_END: trainer

// ANCHOR: fit
/// What a training run leaves behind: one report per epoch, and the loss of
/// every step.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub epochs: Vec<EpochReport>,
    pub step_losses: Vec<f64>,
}

/// Trains for `opts.epochs` and calls `on_epoch` after each one.
pub fn fit(
    trainer: &mut Trainer,
    train: &ReverseDataset,
    val: &ReverseDataset,
    opts: &TrainOptions,
    mut on_epoch: impl FnMut(&EpochReport),
) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let start = Instant::now();
    let n = opts.eval_samples.min(val.len()) as i64;
    let (val_src, val_tgt) = (val.src.narrow(0, 0, n), val.tgt.narrow(0, 0, n));
    let mut history = History::default();
    for epoch in 1..=opts.epochs {
        let batches = epoch_batches(train.len(), opts.batch_size, &mut rng);
        let bar = crate::cli::progress_bar(batches.len() as u64, epoch);
        let (mut loss, mut acc) = (f64::NAN, f64::NAN);
        for idx in &batches {
            let src = train.src.index_select(0, idx);
            let tgt = train.tgt.index_select(0, idx);
            (loss, acc) = trainer.train_step(&src, &tgt);
            history.step_losses.push(loss);
            bar.set_message(format!("loss {loss:.4}"));
            bar.inc(1);
        }
        bar.finish_and_clear();
        let report = EpochReport {
            epoch,
            loss,
            token_acc: acc,
            val_exact_match: exact_match(
                &trainer.model,
                &val_src,
                &val_tgt,
                500,
            ),
            lr: trainer.lr_at(trainer.step + 1),
            seconds: start.elapsed().as_secs_f64(),
        };
        on_epoch(&report);
        history.epochs.push(report);
    }
    history
}
// ANCHOR_END: fit

/// The data sets of the recipe: training seed `data_seed`, validation seed
/// `data_seed + 1`.
pub fn reverse_data(opts: &TrainOptions) -> (ReverseDataset, ReverseDataset) {
    let val_seed = opts.data_seed.wrapping_add(1);
    (
        make_dataset(opts.n_train, opts.data_seed),
        make_dataset(opts.n_val, val_seed),
    )
}

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
