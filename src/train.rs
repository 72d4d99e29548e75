//! Chapter 09 — training: teacher forcing, the warmup schedule, a loss that ignores PAD,
//! bf16 autocast on CUDA, and a checkpoint written atomically.
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Reduction, Tensor};

use crate::data::{epoch_batches, make_dataset, ReverseDataset, PAD_ID, SEQ_LEN, VOCAB};
use crate::decode::exact_match;
use crate::embedding::Init;
use crate::transformer::{parameter_count, Transformer, TransformerConfig};

/// Where `09_train_reverse` writes and chapters 10–11 read by default.
pub const DEFAULT_CHECKPOINT: &str = "checkpoints/reverse_transformer.safetensors";

// ANCHOR: device
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// CUDA when libtorch sees a GPU, else the CPU.
    Auto,
    Cpu,
    Cuda,
}

pub fn select_device(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto => Ok(Device::cuda_if_available()),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
        DeviceChoice::Cuda => bail!(
            "--device cuda was asked for, but libtorch sees no CUDA device (driver missing, no GPU, or a CPU-only libtorch); use --device cpu"
        ),
    }
}

/// Turns on the source chapter's CUDA precision: bf16 autocast for the forward pass and
/// TF32 for the fp32 matrix products that remain. Returns a label for the logs.
pub fn configure_precision(device: Device) -> Result<&'static str> {
    if device.is_cuda() {
        crate::sys::set_cuda_autocast_bf16(true)?;
        crate::sys::set_allow_tf32(true)?;
        Ok("bf16 autocast + TF32")
    } else {
        Ok("fp32")
    }
}
// ANCHOR_END: device

// ANCHOR: schedule
/// lr = d^-½ · min(step^-½, step · warmup^-1.5), with `step` counted from 1: a linear
/// rise for `warmup` steps, then decay as 1/√step. The peak, at step = warmup, is
/// (d · warmup)^-½ ≈ 2.80e-3 for d = 128 and warmup = 1000.
pub fn noam_lr(step: usize, d_model: i64, warmup: usize) -> f64 {
    let s = step.max(1) as f64;
    (d_model as f64).powf(-0.5) * s.powf(-0.5).min(s * (warmup as f64).powf(-1.5))
}
// ANCHOR_END: schedule

// ANCHOR: teacher_forcing
/// tgt: [B, L] → (decoder input tgt[:, :-1], labels tgt[:, 1:]), both [B, L-1].
/// Each position sees the true prefix and is asked for the next token; with the causal
/// mask, one forward pass trains every position at once.
pub fn teacher_forcing(tgt: &Tensor) -> (Tensor, Tensor) {
    let l = tgt.size()[1];
    (tgt.narrow(1, 0, l - 1), tgt.narrow(1, 1, l - 1))
}
// ANCHOR_END: teacher_forcing

// ANCHOR: loss
/// Mean cross-entropy over the non-PAD labels, computed in fp32 even when the logits
/// came out of bf16 autocast.
pub fn masked_cross_entropy(logits: &Tensor, labels: &Tensor, label_smoothing: f64) -> Tensor {
    let v = logits.size()[2];
    logits.reshape([-1, v]).to_kind(Kind::Float).cross_entropy_loss::<Tensor>(
        &labels.reshape([-1]),
        None,
        Reduction::Mean,
        PAD_ID, // these positions contribute neither loss nor gradient
        label_smoothing,
    )
}

/// Share of non-PAD labels whose argmax prediction is right (teacher forcing).
pub fn token_accuracy(logits: &Tensor, labels: &Tensor) -> f64 {
    let real = labels.ne(PAD_ID);
    let hits = logits.argmax(-1, false).eq_tensor(labels).logical_and(&real);
    hits.sum(Kind::Float).double_value(&[]) / real.sum(Kind::Float).double_value(&[])
}
// ANCHOR_END: loss

/// The recipe of the source chapter; only `epochs`, `seed` and the init are flags.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub epochs: usize,
    /// Seeds the weights, the dropout masks and the shuffling.
    pub seed: u64,
    /// Seeds the data: training set `data_seed`, validation set `data_seed + 1`. Kept
    /// apart from `seed` so that runs with different seeds are scored on the same samples.
    pub data_seed: u64,
    pub n_train: usize,
    pub n_val: usize,
    pub batch_size: usize,
    pub warmup: usize,
    /// Validation samples decoded after each epoch (the final check uses all n_val).
    pub eval_samples: usize,
    pub label_smoothing: f64,
}

/// The default model seed. Seeds 0-4 on the same data ended at 0.989, 0.995, 0.997,
/// 0.999 and 0.999 exact match on a 2-core CPU (`scripts/seed-spread.sh`); the default
/// is the median run, seed 2, not the best one.
pub const DEFAULT_SEED: u64 = 2;

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions { epochs: 10, seed: DEFAULT_SEED, data_seed: 0, n_train: 20_000, n_val: 1_000, batch_size: 64, warmup: 1000, eval_samples: 500, label_smoothing: 0.0 }
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
            self.epoch, self.loss, self.token_acc, self.val_exact_match, self.lr, self.seconds
        )
    }
}

// ANCHOR: trainer
/// The model, its optimizer and the step counter the schedule reads.
pub struct Trainer {
    pub vs: nn::VarStore,
    pub model: Transformer,
    pub opt: nn::Optimizer,
    pub step: usize,
    pub device: Device,
    warmup: usize,
    label_smoothing: f64,
}

impl Trainer {
    pub fn new(config: TransformerConfig, device: Device, seed: u64, warmup: usize, label_smoothing: f64) -> Result<Self> {
        tch::manual_seed(seed as i64); // weights and dropout masks
        let vs = nn::VarStore::new(device);
        let model = Transformer::new(vs.root(), config)?;
        // lr is overwritten before every step by the schedule; the 1.0 here is unused.
        let opt = nn::Adam { beta1: 0.9, beta2: 0.98, eps: 1e-9, wd: 0.0, amsgrad: false }.build(&vs, 1.0)?;
        Ok(Trainer { vs, model, opt, step: 0, device, warmup, label_smoothing })
    }

    /// One optimizer step on a batch; returns the loss and the batch's token accuracy.
    pub fn train_step(&mut self, src: &Tensor, tgt: &Tensor) -> (f64, f64) {
        self.train_step_profiled(src, tgt, &mut StepProfile::default())
    }

    /// `train_step`, adding the wall time of each phase to `prof` (on the CPU, where
    /// calls are synchronous; CUDA calls return before the work is done).
    pub fn train_step_profiled(&mut self, src: &Tensor, tgt: &Tensor, prof: &mut StepProfile) -> (f64, f64) {
        let t = Instant::now();
        let (src, tgt) = (src.to_device(self.device), tgt.to_device(self.device));
        let (tgt_in, tgt_out) = teacher_forcing(&tgt);
        self.step += 1;
        self.opt.set_lr(noam_lr(self.step, self.model.config.d_model, self.warmup));
        // Autocast only acts on CUDA (bf16 after configure_precision); on the CPU it is a no-op.
        let logits = crate::sys::autocast(self.device.is_cuda(), || self.model.forward(&src, &tgt_in, true));
        let loss = masked_cross_entropy(&logits, &tgt_out, self.label_smoothing);
        let t = prof.lap(0, t);
        self.opt.zero_grad();
        loss.backward();
        let t = prof.lap(1, t);
        self.opt.step();
        let t = prof.lap(2, t);
        let out = tch::no_grad(|| (loss.double_value(&[]), token_accuracy(&logits, &tgt_out)));
        prof.lap(3, t);
        out
    }

    /// The learning rate the next step will use.
    pub fn next_lr(&self) -> f64 {
        noam_lr(self.step + 1, self.model.config.d_model, self.warmup)
    }
}
// ANCHOR_END: trainer

/// Where the time of training steps went: forward + loss, backward, optimizer, and
/// reading the loss and accuracy back.
#[derive(Debug, Default, Clone, Copy)]
pub struct StepProfile {
    pub seconds: [f64; 4],
}

impl StepProfile {
    pub const PHASES: [&'static str; 4] = ["forward+loss", "backward", "optimizer", "read-back"];

    fn lap(&mut self, phase: usize, since: Instant) -> Instant {
        let now = Instant::now();
        self.seconds[phase] += (now - since).as_secs_f64();
        now
    }

    /// "forward+loss 21.3 ms (45%), backward …" per step, over `steps` steps.
    pub fn summary(&self, steps: usize) -> String {
        let total: f64 = self.seconds.iter().sum();
        Self::PHASES
            .iter()
            .zip(self.seconds)
            .map(|(name, s)| format!("{name} {:.2} ms ({:.0}%)", 1000.0 * s / steps as f64, 100.0 * s / total))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

// ANCHOR: fit
/// Trains for `opts.epochs` and calls `on_epoch` after each one.
pub fn fit(trainer: &mut Trainer, train: &ReverseDataset, val: &ReverseDataset, opts: &TrainOptions, mut on_epoch: impl FnMut(&EpochReport)) -> Vec<EpochReport> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let start = Instant::now();
    let eval_n = opts.eval_samples.min(val.len()) as i64;
    let mut history = Vec::new();
    for epoch in 1..=opts.epochs {
        let batches = epoch_batches(train.len(), opts.batch_size, &mut rng);
        let bar = progress_bar(batches.len() as u64, epoch);
        let (mut loss, mut acc) = (f64::NAN, f64::NAN);
        for idx in &batches {
            (loss, acc) = trainer.train_step(&train.src.index_select(0, idx), &train.tgt.index_select(0, idx));
            bar.set_message(format!("loss {loss:.4}"));
            bar.inc(1);
        }
        bar.finish_and_clear();
        let em = exact_match(&trainer.model, &val.src.narrow(0, 0, eval_n), &val.tgt.narrow(0, 0, eval_n), 500);
        let report = EpochReport { epoch, loss, token_acc: acc, val_exact_match: em, lr: trainer.next_lr(), seconds: start.elapsed().as_secs_f64() };
        on_epoch(&report);
        history.push(report);
    }
    history
}
// ANCHOR_END: fit

/// A progress bar on a terminal; nothing at all when stderr is piped (the book embeds
/// the output and wants clean lines).
fn progress_bar(len: u64, epoch: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template("epoch {prefix:>2} {bar:30} {pos}/{len} {msg} [{elapsed_precise}]")
            .expect("a valid template"),
    );
    bar.set_prefix(epoch.to_string());
    bar
}

/// The data sets of the recipe: training seed `data_seed`, validation seed `data_seed + 1`.
pub fn reverse_data(opts: &TrainOptions) -> (ReverseDataset, ReverseDataset) {
    (make_dataset(opts.n_train, opts.data_seed), make_dataset(opts.n_val, opts.data_seed + 1))
}

/// The header line of a training log.
pub fn describe_run(trainer: &Trainer, precision: &str, opts: &TrainOptions) -> String {
    format!(
        "device={} precision={} threads={} parameters={} init={} seed={} data_seed={}",
        device_name(trainer.device),
        precision,
        tch::get_num_threads(),
        thousands(parameter_count(&trainer.vs)),
        trainer.model.config.init.name(),
        opts.seed,
        opts.data_seed
    )
}

pub fn device_name(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// 931213 → "931,213"
pub fn thousands(n: i64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Creates the folder `path` will be written into, if it has one and it is missing.
pub fn create_parent_dir(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(())
}

/// Applies `--threads`: libtorch's intra-op thread count, when the user gave one.
pub fn set_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        ensure!(n > 0, "--threads must be at least 1");
        tch::set_num_threads(n as i32);
    }
    Ok(())
}

// ANCHOR: checkpoint
/// Saves every variable as fp32 in safetensors, with the model's config in the file's
/// metadata so a loader can refuse a checkpoint of another shape with a clear message.
/// Written to a temporary file and renamed: an interrupted save never leaves a torn file.
pub fn save_checkpoint(vs: &nn::VarStore, config: &TransformerConfig, path: &Path) -> Result<()> {
    create_parent_dir(path)?;
    let mut named: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let mut bytes = Vec::with_capacity(named.len());
    for (name, t) in &named {
        let t = t.to_device(Device::Cpu).to_kind(Kind::Float).contiguous();
        let values = Vec::<f32>::try_from(&t.flatten(0, -1))?;
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.push((name.clone(), t.size().iter().map(|&d| d as usize).collect::<Vec<_>>(), data));
    }
    let views = bytes
        .iter()
        .map(|(n, shape, data)| Ok((n.as_str(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), data)?)))
        .collect::<Result<Vec<_>>>()?;
    // The temporary name is unique to this process and call, so two runs saving to the same
    // path cannot rename each other's half-written file; the last rename wins, whole.
    static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = PathBuf::from(format!("{}.{}-{n}.tmp", path.display(), std::process::id()));
    let written = safetensors::serialize_to_file(views, &Some(config_metadata(config)), &tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn config_metadata(c: &TransformerConfig) -> HashMap<String, String> {
    [
        ("format", "transformer-course/1".to_string()),
        ("src_vocab", c.src_vocab.to_string()),
        ("tgt_vocab", c.tgt_vocab.to_string()),
        ("d_model", c.d_model.to_string()),
        ("num_heads", c.num_heads.to_string()),
        ("dff", c.dff.to_string()),
        ("num_layers", c.num_layers.to_string()),
        ("max_len", c.max_len.to_string()),
        ("init", c.init.name().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Loads a checkpoint written by `save_checkpoint` onto `device` for inference (dropout
/// is irrelevant there and set to 0). The stored config must equal `expected` in every
/// field that shapes the model.
pub fn load_checkpoint(path: &Path, expected: &TransformerConfig, device: Device) -> Result<(nn::VarStore, Transformer)> {
    let buf = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "no checkpoint at {}: train first with `cargo run --release --bin 09_train_reverse`",
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let (_, meta) = safetensors::SafeTensors::read_metadata(&buf)
        .map_err(|e| anyhow::anyhow!("{} is not a safetensors file ({e:?})", path.display()))?;
    let m = meta.metadata().clone().unwrap_or_default();
    ensure!(
        m.get("format").map(String::as_str) == Some("transformer-course/1"),
        "{} is not a checkpoint of this course (its metadata has no transformer-course config)",
        path.display()
    );
    let field = |k: &str| -> Result<i64> {
        m.get(k).and_then(|v| v.parse().ok()).with_context(|| format!("{}: metadata field '{k}' missing or not a number", path.display()))
    };
    let stored = TransformerConfig {
        src_vocab: field("src_vocab")?,
        tgt_vocab: field("tgt_vocab")?,
        d_model: field("d_model")?,
        num_heads: field("num_heads")?,
        dff: field("dff")?,
        num_layers: field("num_layers")?,
        max_len: field("max_len")?,
        dropout: 0.0,
        init: expected.init,
    };
    let want = TransformerConfig { dropout: 0.0, ..*expected };
    if stored != want {
        bail!("{} was trained with a different configuration: {} (this program needs {})", path.display(), shape_summary(&stored), shape_summary(&want));
    }
    let mut vs = nn::VarStore::new(device);
    let model = Transformer::new(vs.root(), want)?;
    let tensors = safetensors::SafeTensors::deserialize(&buf).map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))?;
    tch::no_grad(|| -> Result<()> {
        for (name, mut var) in vs.variables() {
            let view = tensors.tensor(&name).map_err(|_| anyhow::anyhow!("{} has no tensor '{name}'", path.display()))?;
            let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
            ensure!(shape == var.size(), "{}: '{name}' has shape {shape:?}, the model needs {:?}", path.display(), var.size());
            ensure!(view.dtype() == safetensors::Dtype::F32, "{}: '{name}' is not fp32", path.display());
            let values: Vec<f32> = view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            var.copy_(&Tensor::from_slice(&values).view(shape.as_slice()).to_device(device));
        }
        Ok(())
    })?;
    vs.freeze();
    Ok((vs, model))
}

fn shape_summary(c: &TransformerConfig) -> String {
    format!(
        "vocab {}/{}, d_model {}, heads {}, dff {}, layers {}, max_len {}",
        c.src_vocab, c.tgt_vocab, c.d_model, c.num_heads, c.dff, c.num_layers, c.max_len
    )
}
// ANCHOR_END: checkpoint

/// The model configuration of the reversal task with a given init.
pub fn reverse_config(init: Init) -> TransformerConfig {
    let c = TransformerConfig { init, ..TransformerConfig::reverse_task() };
    debug_assert_eq!((c.src_vocab, c.max_len), (VOCAB, SEQ_LEN as i64));
    c
}
