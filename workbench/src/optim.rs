//! Adam through libtorch's fused kernel: `at::_fused_adam_`, what PyTorch runs
//! for `Adam(fused=True)`, reached through the C++ shim because tch does not
//! expose it.
//!
//! tch's `nn::Adam` is libtorch's C++ `torch::optim::Adam`, which updates the
//! variables one after another with a handful of kernels each: on a GPU,
//! several hundred launches per step for this model. The fused kernel updates
//! all of them in a few launches, with the same arithmetic. Both implement
//! chapter 09's [`Optimizer`], so the engine can give a `Trainer` either.
use anyhow::Result;
use tch::nn::{self, OptimizerConfig};
use tch::{Kind, Tensor};

use crate::sys::{self, Lr};
use transformer_course::train::{Optimizer, ADAM};

/// Adam's hyperparameters; defined in `sys`, which passes them to the kernel.
pub use crate::sys::AdamHyper;

impl From<nn::Adam> for AdamHyper {
    fn from(a: nn::Adam) -> Self {
        AdamHyper {
            beta1: a.beta1,
            beta2: a.beta2,
            eps: a.eps,
            weight_decay: a.wd,
        }
    }
}

/// Which implementation of Adam a trainer uses. Both compute the same update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AdamKind {
    /// libtorch's multi-tensor `at::_fused_adam_` (PyTorch's `fused=True`).
    #[default]
    Fused,
    /// tch's `nn::Adam` (libtorch's `torch::optim::Adam`, one variable at a
    /// time).
    Tch,
}

impl AdamKind {
    pub fn name(self) -> &'static str {
        match self {
            AdamKind::Fused => "fused",
            AdamKind::Tch => "tch",
        }
    }
}

/// Chapter 09's Adam (its settings, `train::ADAM`) over every trainable
/// variable of `vs`, in the implementation `kind`.
pub fn adam(kind: AdamKind, vs: &nn::VarStore) -> Result<Box<dyn Optimizer>> {
    Ok(match kind {
        AdamKind::Fused => Box::new(FusedAdam::new(vs, ADAM.into())),
        AdamKind::Tch => Box::new(ADAM.build(vs, 0.0)?), // lr: the schedule's
    })
}

// ANCHOR: fused_adam
/// Adam over every trainable variable of a VarStore, one fused kernel per step.
/// It owns the moment buffers and the step count that `torch::optim::Adam`
/// keeps inside itself; the step count is a tensor on the device, because the
/// kernel reads it from there (and a CUDA graph can then advance it on every
/// replay).
pub struct FusedAdam {
    params: Vec<Tensor>,
    exp_avgs: Vec<Tensor>,    // first moments, m
    exp_avg_sqs: Vec<Tensor>, // second moments, v
    step: Tensor,             // float32 scalar on the device
    lr: f64,
    lr_tensor: Option<Tensor>, // see `use_device_lr`
    hyper: AdamHyper,
}

impl FusedAdam {
    /// Takes the variables trainable now: build the model first.
    pub fn new(vs: &nn::VarStore, hyper: AdamHyper) -> Self {
        let params = vs.trainable_variables();
        let zeros = || -> Vec<Tensor> {
            tch::no_grad(|| params.iter().map(Tensor::zeros_like).collect())
        };
        FusedAdam {
            exp_avgs: zeros(),
            exp_avg_sqs: zeros(),
            step: Tensor::zeros([], (Kind::Float, vs.device())),
            params,
            lr: 0.0,
            lr_tensor: None,
            hyper,
        }
    }
}

// ANCHOR_END: fused_adam

// ANCHOR: fused_adam_step
impl Optimizer for FusedAdam {
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
        if let Some(t) = &mut self.lr_tensor {
            let _ = t.fill_(lr); // queued like any kernel: no wait for the GPU
        }
    }

    /// Forgets the gradients (PyTorch's `zero_grad(set_to_none=True)`, which is
    /// also what tch's `zero_grad` does): the next backward pass allocates
    /// fresh ones instead of adding to zeros written by a kernel.
    fn zero_grad(&mut self) {
        sys::set_grads_to_none(&self.params).unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// One Adam step for every variable that has a gradient.
    fn step(&mut self) {
        let lr = match &self.lr_tensor {
            Some(t) => Lr::Tensor(t),
            None => Lr::Value(self.lr),
        };
        let (m, v) = (&self.exp_avgs, &self.exp_avg_sqs);
        sys::fused_adam_step(&self.params, m, v, &self.step, lr, self.hyper)
            .unwrap_or_else(|e| panic!("{e:#}"))
    }
}
// ANCHOR_END: fused_adam_step

impl FusedAdam {
    /// From now on the learning rate lives in a float32 scalar on the device,
    /// which `set_lr` overwrites: a captured step reads it on every replay,
    /// where a number would have been baked into the graph at capture time.
    pub fn use_device_lr(&mut self) {
        let device = self.step.device();
        self.lr_tensor = Some(Tensor::full([], self.lr, (Kind::Float, device)));
    }

    /// Steps taken so far (reads the device's counter).
    pub fn steps_taken(&self) -> i64 {
        self.step.double_value(&[]) as i64
    }

    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// The variables it updates, and their first and second moments, in one
    /// order.
    pub fn state(&self) -> (&[Tensor], &[Tensor], &[Tensor]) {
        (&self.params, &self.exp_avgs, &self.exp_avg_sqs)
    }
}
