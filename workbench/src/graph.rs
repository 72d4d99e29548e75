//! The training step as one CUDA graph: captured once, replayed for every
//! batch.
//!
//! A step of this small model is a few hundred kernels of a few microseconds
//! each, and on a fast GPU the host cannot launch them as fast as the GPU runs
//! them: the GPU waits for the host. A CUDA graph records the kernels of one
//! step, with their arguments and memory addresses, and replays them all with a
//! single launch.
//!
//! What that demands, and how this module meets it:
//! * **Static memory.** A replay reads and writes the addresses it recorded.
//!   The batch is copied into two tensors made once (`src`, `tgt`); the loss
//!   and the accuracy land in one tensor that the capture allocated (`stats`);
//!   the gradients are the ones the captured backward pass allocated, and are
//!   never cleared again (the captured pass overwrites them).
//! * **Static shapes.** Every batch has the same shape: the partial last batch
//!   of an epoch is dropped (`data::epoch_batches`).
//! * **Nothing on the host inside.** A number the host reads, or computes and
//!   passes to a kernel, is frozen into the graph. The learning rate and Adam's
//!   step count are therefore tensors on the device
//!   (`FusedAdam::use_device_lr`), and the optimizer is the fused one: tch's
//!   Adam computes its bias corrections on the host. `GraphedTrainer::new`
//!   puts a fused Adam into the trainer it wraps.
//! * **Random numbers that advance.** Dropout draws from libtorch's default
//!   CUDA generator, which `CUDAGraph::capture_begin` registers with the graph:
//!   each replay first moves the generator's offset on by what the whole graph
//!   consumes, so every replay draws fresh masks (`dropout_masks_differ`
//!   checks it on a GPU).
//! * **A side stream.** libtorch captures only on a stream other than the
//!   default one. The first steps run eagerly on that stream (cuBLAS and the
//!   allocator set themselves up outside the capture), then one step is
//!   captured there.
use anyhow::{ensure, Result};
use tch::{Device, Kind, Tensor};

use crate::optim::{AdamKind, FusedAdam};
use crate::precision::Precision;
use crate::sys::{self, CudaGraph, SideStream};
use transformer_course::train::{
    teacher_forcing, token_accuracy, Learner, Trainer, ADAM,
};

/// Eager steps on the side stream before the capture (PyTorch's recipe uses 3).
pub const WARMUP_STEPS: usize = 3;

/// Why a CUDA graph cannot run here. The programs turn these into advice on
/// their flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// The device is not a CUDA GPU.
    NotCuda,
    /// tch's Adam computes its step sizes on the host: a graph would freeze
    /// them.
    NeedsFusedAdam,
    /// This libtorch cannot capture graphs (libtorch's reason).
    Unavailable(String),
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsupported::NotCuda => write!(f, "a CUDA graph needs a CUDA device"),
            Unsupported::NeedsFusedAdam => write!(
                f,
                "a CUDA graph needs the fused Adam: tch's Adam computes its step \
                 sizes on the host, and a graph would freeze them"
            ),
            Unsupported::Unavailable(why) => {
                write!(f, "this libtorch cannot capture CUDA graphs: {why}")
            }
        }
    }
}

impl std::error::Error for Unsupported {}

/// Why a CUDA graph cannot run here with this Adam, if it cannot.
pub fn check_supported(
    device: Device,
    adam: AdamKind,
) -> Result<(), Unsupported> {
    if !device.is_cuda() {
        return Err(Unsupported::NotCuda);
    }
    if adam != AdamKind::Fused {
        return Err(Unsupported::NeedsFusedAdam);
    }
    sys::cuda_graphs_available()
        .map_err(|e| Unsupported::Unavailable(format!("{e:#}")))
}

/// A `Trainer` whose step is captured once as a CUDA graph and replayed for
/// every batch, with the static tensors and the side stream the graph needs.
pub struct GraphedTrainer {
    pub trainer: Trainer,
    precision: Precision,
    stream: SideStream,
    src: Tensor,
    tgt: Tensor,
    captured: Option<(CudaGraph, Tensor)>, // the graph and its `stats` output
    warmup_left: usize,
    device_index: usize,
    capture_failed: bool, // a failed capture is not tried again
}

/// Phases that `learn_timed` reports to its `lap` callback.
pub const PHASES: [&str; 3] = ["copy-in", "replay", "read-back"];

impl GraphedTrainer {
    /// Wraps a trainer that has not taken a step yet, giving it the fused Adam
    /// with its learning rate on the device.
    pub fn new(mut trainer: Trainer, precision: Precision) -> Result<Self> {
        let device = trainer.vs.device();
        check_supported(device, AdamKind::Fused)?;
        let Device::Cuda(index) = device else {
            unreachable!("checked above")
        };
        ensure!(trainer.step == 0, "a CUDA graph must wrap a fresh trainer");
        let mut adam = FusedAdam::new(&trainer.vs, ADAM.into());
        adam.use_device_lr();
        trainer.opt = Box::new(adam);
        // The batch shape of the recipe; a first batch of another shape
        // replaces it before the capture (`fit_shape`).
        let shape = [64, transformer_course::vocab::SEQ_LEN as i64];
        Ok(GraphedTrainer {
            trainer,
            precision,
            stream: SideStream::new(index)?,
            src: Tensor::zeros(shape, (Kind::Int64, device)),
            tgt: Tensor::zeros(shape, (Kind::Int64, device)),
            captured: None,
            warmup_left: WARMUP_STEPS,
            device_index: index,
            capture_failed: false,
        })
    }

    /// Takes a batch of another shape than the first one it sees (before the
    /// capture; afterwards the shape is fixed).
    fn fit_shape(&mut self, src: &Tensor, tgt: &Tensor) -> Result<()> {
        if self.src.size() == src.size() && self.tgt.size() == tgt.size() {
            return Ok(());
        }
        ensure!(
            self.captured.is_none(),
            "the CUDA graph was captured for batches of {:?} and {:?}, got {:?} \
             and {:?}",
            self.src.size(),
            self.tgt.size(),
            src.size(),
            tgt.size()
        );
        let device = self.src.device();
        self.src = Tensor::zeros(src.size(), (Kind::Int64, device));
        self.tgt = Tensor::zeros(tgt.size(), (Kind::Int64, device));
        Ok(())
    }

    /// One step: eager on the side stream for the first `WARMUP_STEPS`, then
    /// the capture, then replays. `lap(i)` is called at the end of phase
    /// `PHASES[i]`, for the benchmark's profile.
    pub fn learn_timed(
        &mut self,
        src: &Tensor,
        tgt: &Tensor,
        lap: &mut dyn FnMut(usize),
    ) -> Result<(f64, f64)> {
        ensure!(
            !self.capture_failed,
            "the CUDA graph's capture failed earlier; train without the graph"
        );
        self.fit_shape(src, tgt)?;
        self.trainer.advance_schedule(); // fills the device's lr: no graph change
        self.src.copy_(src);
        self.tgt.copy_(tgt);
        lap(0);
        let stats = match &self.captured {
            Some((graph, stats)) => {
                graph.replay()?;
                stats.shallow_clone()
            }
            None if self.warmup_left > 0 => {
                self.warmup_left -= 1;
                let (t, p) = (&mut self.trainer, self.precision);
                let (src, tgt) = (&self.src, &self.tgt);
                self.stream.run(|| step_body(t, p, src, tgt))?
            }
            None => self.capture()?,
        };
        lap(1);
        let v = Vec::<f32>::try_from(&stats.to_device(Device::Cpu))?;
        lap(2);
        Ok((v[0] as f64, v[1] as f64))
    }

    /// Records one step into a graph and runs it for the current batch.
    fn capture(&mut self) -> Result<Tensor> {
        // The capture allocates the gradients in the graph's own memory; the
        // captured backward pass writes them on every replay, and nothing
        // clears them again (the `zero_grad` inside the step only forgets
        // gradients on the host, and these are already gone).
        self.trainer.opt.zero_grad();
        sys::cuda_synchronize(self.device_index)?;
        self.capture_failed = true; // until the capture below succeeds
        let mut graph = CudaGraph::new()?;
        let (t, p) = (&mut self.trainer, self.precision);
        let (src, tgt) = (&self.src, &self.tgt);
        let stats = self.stream.run(|| {
            // Autocast's cache would keep bf16 weights made inside the
            // capture alive outside it.
            sys::with_autocast_cache(false, || {
                graph.capture(|| step_body(t, p, src, tgt))
            })
        })??;
        self.capture_failed = false;
        graph.replay()?; // the capture only recorded: now run this batch
        self.captured = Some((graph, stats.shallow_clone()));
        Ok(stats)
    }
}

impl Learner for GraphedTrainer {
    fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> Result<(f64, f64)> {
        self.learn_timed(src, tgt, &mut |_| {})
    }

    fn trainer(&self) -> &Trainer {
        &self.trainer
    }
}

// ANCHOR: step_body
/// What the graph records: chapter 09's `train_step` under the precision's
/// autocast, and [loss, token accuracy] in one tensor, so that one copy to the
/// host reads both.
fn step_body(
    t: &mut Trainer,
    p: Precision,
    src: &Tensor,
    tgt: &Tensor,
) -> Tensor {
    let device = src.device();
    let (loss, logits) = p.autocast(device, || t.train_step(src, tgt));
    let acc = token_accuracy(&logits, &teacher_forcing(tgt).1);
    Tensor::stack(&[loss.detach(), acc], 0)
}
// ANCHOR_END: step_body

/// Captures `dropout(p = 0.5)` of a tensor of ones and replays it twice:
/// returns the share of elements whose mask differs between the two replays
/// (about 0.5 when the generator advances, 0 when it does not) and the share
/// dropped in the first.
pub fn dropout_masks_differ(device: Device, n: i64) -> Result<(f64, f64)> {
    check_supported(device, AdamKind::Fused)?;
    let Device::Cuda(index) = device else {
        unreachable!("checked above")
    };
    let ones = Tensor::ones([n], (Kind::Float, device));
    let stream = SideStream::new(index)?;
    let _ = stream.run(|| ones.dropout(0.5, true))?; // warm-up, not captured
    sys::cuda_synchronize(index)?;
    let mut graph = CudaGraph::new()?;
    let out = stream.run(|| graph.capture(|| ones.dropout(0.5, true)))??;
    graph.replay()?;
    let first = out.copy();
    graph.replay()?;
    let second = out.copy();
    let share =
        |t: Tensor| t.to_kind(Kind::Float).mean(Kind::Float).double_value(&[]);
    let differ = share(first.eq(0.0).logical_xor(&second.eq(0.0)));
    Ok((differ, share(first.eq(0.0))))
}
