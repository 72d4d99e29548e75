//! The engine around chapter 09's lesson: it takes a `Trainer` and runs its
//! step on a device, in a precision, with either implementation of Adam, and
//! optionally as a CUDA graph (`src/graph.rs`). None of it changes what a step
//! computes, only where and how fast; `fit` takes the result like any other
//! [`Learner`].
use anyhow::Result;
use tch::{Device, Tensor};

use crate::graph::{self, GraphedTrainer};
use crate::optim::{self, AdamKind};
use crate::precision::Precision;
use transformer_course::config::TransformerConfig;
use transformer_course::train::{Learner, TrainOptions, Trainer};

/// How to run the recipe: none of these change the model or its numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineOptions {
    /// Which implementation of Adam (the same update either way).
    pub adam: AdamKind,
    /// None: the device's recipe (bf16 autocast on CUDA, fp32 on the CPU).
    pub precision: Option<Precision>,
    /// Capture the training step once as a CUDA graph and replay it (CUDA only).
    pub cuda_graph: bool,
}

impl EngineOptions {
    /// The precision these options give on `device`.
    pub fn precision_on(&self, device: Device) -> Precision {
        self.precision.unwrap_or(Precision::recipe(device))
    }
}

/// A trainer run step by step as Python would: each batch moved to the
/// trainer's device, each step under the precision's autocast.
pub struct Eager {
    pub trainer: Trainer,
    precision: Precision,
}

impl Eager {
    pub fn new(trainer: Trainer, precision: Precision) -> Self {
        Eager { trainer, precision }
    }
}

impl Learner for Eager {
    fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> Result<(f64, f64)> {
        let device = self.trainer.vs.device();
        let (src, tgt) = (src.to_device(device), tgt.to_device(device));
        let t = &mut self.trainer;
        self.precision.autocast(device, || t.learn(&src, &tgt))
    }

    fn trainer(&self) -> &Trainer {
        &self.trainer
    }
}

/// Chapter 09's trainer, run eagerly or as a CUDA graph.
pub enum Engine {
    Eager(Box<Eager>),
    Graphed(Box<GraphedTrainer>),
}

impl Learner for Engine {
    fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> Result<(f64, f64)> {
        match self {
            Engine::Eager(e) => e.learn(src, tgt),
            Engine::Graphed(g) => g.learn(src, tgt),
        }
    }

    fn trainer(&self) -> &Trainer {
        match self {
            Engine::Eager(e) => e.trainer(),
            Engine::Graphed(g) => g.trainer(),
        }
    }
}

/// Chapter 09's trainer for `config` on `device`, wrapped as `engine` asks.
pub fn learner(
    config: TransformerConfig,
    device: Device,
    recipe: &TrainOptions,
    engine: &EngineOptions,
) -> Result<Engine> {
    if engine.cuda_graph {
        graph::check_supported(device, engine.adam)?;
    }
    let mut trainer = Trainer::new(config, device, recipe)?;
    let precision = engine.precision_on(device);
    if engine.cuda_graph {
        let graphed = GraphedTrainer::new(trainer, precision)?;
        return Ok(Engine::Graphed(Box::new(graphed)));
    }
    trainer.opt = optim::adam(engine.adam, &trainer.vs)?;
    Ok(Engine::Eager(Box::new(Eager::new(trainer, precision))))
}
