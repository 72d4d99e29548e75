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
//!   Adam computes its bias corrections on the host.
//! * **Random numbers that advance.** Dropout draws from libtorch's default
//!   CUDA generator, which `CUDAGraph::capture_begin` registers with the graph:
//!   each replay first moves the generator's offset on by what the whole graph
//!   consumes, so every replay draws fresh masks (`dropout_masks_differ`
//!   checks it on a GPU).
//! * **A side stream.** libtorch captures only on a stream other than the
//!   default one. The first steps run eagerly on that stream (cuBLAS and the
//!   allocator set themselves up outside the capture), then one step is
//!   captured there.
use anyhow::{bail, ensure, Result};
use tch::{Device, Kind, Tensor};

use crate::optim::{Adam, Optimizer};
use crate::sys::{self, CudaGraph, SideStream};
use crate::train::{masked_cross_entropy, teacher_forcing, Precision, Trainer};
use crate::vocab::PAD_ID;

/// Eager steps on the side stream before the capture (PyTorch's recipe uses 3).
pub const WARMUP_STEPS: usize = 3;

/// Why `--cuda-graph` cannot run here, if it cannot.
pub fn check_supported(device: Device, optimizer: Optimizer) -> Result<()> {
    if !device.is_cuda() {
        bail!("--cuda-graph needs a CUDA device");
    }
    if optimizer != Optimizer::Fused {
        bail!(
            "--cuda-graph needs the fused optimizer: tch's Adam computes its \
             step sizes on the host, and a graph would freeze them"
        );
    }
    sys::cuda_graphs_available()
}

/// The graph, its static inputs and output, and the side stream it lives on.
pub struct GraphedStep {
    stream: SideStream,
    src: Tensor,
    tgt: Tensor,
    captured: Option<(CudaGraph, Tensor)>, // the graph and its `stats` output
    warmup_left: usize,
    device_index: usize,
    capture_failed: bool, // a failed capture is not tried again
}

impl GraphedStep {
    pub fn new(device: Device, opt: &mut Adam) -> Result<Self> {
        check_supported(device, opt.which())?;
        let Device::Cuda(index) = device else {
            unreachable!("checked above")
        };
        if let Some(fused) = opt.fused_mut() {
            fused.use_device_lr();
        }
        // The batch shape of the recipe; `step` refuses any other.
        let shape = [64, crate::vocab::SEQ_LEN as i64];
        Ok(GraphedStep {
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
}

/// `Trainer::train_step` with a graph: warm-up, capture, then replays.
pub fn train_step(t: &mut Trainer, src: &Tensor, tgt: &Tensor) -> (f64, f64) {
    profiled_step(t, src, tgt, &mut |_| {}).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Phases that `profiled_step` reports to its `lap` callback.
pub const PHASES: [&str; 3] = ["copy-in", "replay", "read-back"];

/// One graphed step; `lap(i)` is called at the end of phase `PHASES[i]`.
pub fn profiled_step(
    t: &mut Trainer,
    src: &Tensor,
    tgt: &Tensor,
    lap: &mut dyn FnMut(usize),
) -> Result<(f64, f64)> {
    let Some(mut g) = t.graph.take() else {
        bail!("this trainer was made without --cuda-graph");
    };
    let out = step(&mut g, t, src, tgt, lap);
    t.graph = Some(g);
    out
}

fn step(
    g: &mut GraphedStep,
    t: &mut Trainer,
    src: &Tensor,
    tgt: &Tensor,
    lap: &mut dyn FnMut(usize),
) -> Result<(f64, f64)> {
    ensure!(
        !g.capture_failed,
        "the CUDA graph's capture failed earlier; train without --cuda-graph"
    );
    g.fit_shape(src, tgt)?;
    t.step += 1;
    t.opt.set_lr(t.lr_at(t.step)); // fills the device's lr: no graph change
    g.src.copy_(src);
    g.tgt.copy_(tgt);
    lap(0);
    // ANCHOR: replay
    let stats = match &g.captured {
        Some((graph, stats)) => {
            graph.replay()?;
            stats.shallow_clone()
        }
        None if g.warmup_left > 0 => {
            g.warmup_left -= 1;
            g.stream.run(|| {
                t.opt.zero_grad();
                step_body(t, &g.src, &g.tgt)
            })?
        }
        None => {
            // The capture allocates the gradients in the graph's own memory;
            // the captured backward pass writes them, and nothing clears them
            // again.
            t.opt.zero_grad();
            sys::cuda_synchronize(g.device_index)?;
            g.capture_failed = true; // until the capture below succeeds
            let mut graph = CudaGraph::new()?;
            let stats = g.stream.run(|| {
                // Autocast's cache would keep bf16 weights made inside the
                // capture alive outside it.
                sys::with_autocast_cache(false, || {
                    graph.capture(|| step_body(t, &g.src, &g.tgt))
                })
            })??;
            g.capture_failed = false;
            graph.replay()?; // the capture only recorded: now run this batch
            g.captured = Some((graph, stats.shallow_clone()));
            stats
        }
    };
    // ANCHOR_END: replay
    lap(1);
    let v = Vec::<f32>::try_from(&stats.to_device(Device::Cpu))?;
    lap(2);
    Ok((v[0] as f64, v[1] as f64))
}

// ANCHOR: step_body
/// What the graph records: forward, loss, backward and the fused Adam step, and
/// [loss, token accuracy] in one tensor, so one copy to the host reads both.
fn step_body(t: &mut Trainer, src: &Tensor, tgt: &Tensor) -> Tensor {
    let (tgt_in, tgt_out) = teacher_forcing(tgt);
    let bf16 = t.precision == Precision::Bf16;
    let logits = sys::autocast_on(t.device, bf16, || {
        t.model.forward(src, &tgt_in, true)
    });
    let loss = masked_cross_entropy(&logits, &tgt_out, t.label_smoothing);
    loss.backward();
    t.opt.step();
    tch::no_grad(|| {
        let real = tgt_out.ne(PAD_ID);
        let hits = logits.argmax(-1, false).eq_tensor(&tgt_out);
        let hits = hits.logical_and(&real).sum(Kind::Float);
        let acc = hits / real.sum(Kind::Float);
        Tensor::stack(&[loss.detach(), acc], 0)
    })
}
// ANCHOR_END: step_body

/// Captures `dropout(p = 0.5)` of a tensor of ones and replays it twice:
/// returns the share of elements whose mask differs between the two replays
/// (about 0.5 when the generator advances, 0 when it does not) and the share
/// dropped in the first.
pub fn dropout_masks_differ(device: Device, n: i64) -> Result<(f64, f64)> {
    check_supported(device, Optimizer::Fused)?;
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
