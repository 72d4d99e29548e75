//! The benchmark's apparatus (`scripts/bench_train.rs`): chapter 09's training
//! step, timed from outside. There is no copy of the step here; a stopwatch is
//! threaded through the optimiser, whose calls mark where the step's phases end
//! (`zero_grad` comes right after the loss, `step` right after backward).
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use anyhow::Result;
use tch::{Device, Tensor};

use crate::engine::{self, Engine, EngineOptions};
use crate::graph;
use crate::optim;
use transformer_course::config::TransformerConfig;
use transformer_course::train::{Learner, Optimizer, TrainOptions, Trainer};

/// Phases of an eager step, in the order they end.
pub const PHASES: [&str; 4] =
    ["forward+loss", "backward", "optimizer", "read-back"];

/// Seconds spent in each phase so far, and the time the current phase began.
#[derive(Debug)]
pub struct Stopwatch {
    pub seconds: Vec<f64>,
    last: Instant,
}

impl Stopwatch {
    pub fn new(phases: usize) -> Self {
        Stopwatch {
            seconds: vec![0.0; phases],
            last: Instant::now(),
        }
    }

    /// Starts timing anew (the next lap counts from now).
    pub fn restart(&mut self) {
        self.last = Instant::now();
    }

    /// Ends phase `i`: adds the time since the previous lap to it.
    pub fn lap(&mut self, i: usize) {
        let now = Instant::now();
        self.seconds[i] += (now - self.last).as_secs_f64();
        self.last = now;
    }
}

/// An optimiser that passes every call on to `inner` and laps the stopwatch:
/// `zero_grad` ends the forward pass and loss, `step` ends backward before it
/// runs and the optimizer phase after.
pub struct Timed {
    inner: Box<dyn Optimizer>,
    clock: Rc<RefCell<Stopwatch>>,
}

impl Optimizer for Timed {
    fn set_lr(&mut self, lr: f64) {
        self.inner.set_lr(lr)
    }
    fn zero_grad(&mut self) {
        self.clock.borrow_mut().lap(0);
        self.inner.zero_grad()
    }
    fn step(&mut self) {
        self.clock.borrow_mut().lap(1);
        self.inner.step();
        self.clock.borrow_mut().lap(2);
    }
}

/// The learner the benchmark times: the engine's, with the stopwatch threaded
/// through the optimiser (eager) or the graph's own phases (graphed).
pub struct BenchLearner {
    engine: Engine,
    clock: Rc<RefCell<Stopwatch>>,
}

impl BenchLearner {
    pub fn new(
        config: TransformerConfig,
        device: Device,
        recipe: &TrainOptions,
        options: &EngineOptions,
    ) -> Result<Self> {
        let mut engine = engine::learner(config, device, recipe, options)?;
        let phases = match engine {
            Engine::Eager(_) => PHASES.len(),
            Engine::Graphed(_) => graph::PHASES.len(),
        };
        let clock = Rc::new(RefCell::new(Stopwatch::new(phases)));
        if let Engine::Eager(e) = &mut engine {
            // A fresh Adam of the same kind, timed: nothing has stepped yet.
            let inner = optim::adam(options.adam, &e.trainer.vs)?;
            let clock = clock.clone();
            e.trainer.opt = Box::new(Timed { inner, clock });
        }
        Ok(BenchLearner { engine, clock })
    }

    /// The names of the phases `seconds` reports.
    pub fn phases(&self) -> &'static [&'static str] {
        match self.engine {
            Engine::Eager(_) => &PHASES,
            Engine::Graphed(_) => &graph::PHASES,
        }
    }

    /// Seconds per phase since the last `reset`.
    pub fn seconds(&self) -> Vec<f64> {
        self.clock.borrow().seconds.clone()
    }

    /// Forgets the time measured so far (after the untimed steps).
    pub fn reset(&mut self) {
        let n = self.phases().len();
        *self.clock.borrow_mut() = Stopwatch::new(n);
    }
}

impl Learner for BenchLearner {
    fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> Result<(f64, f64)> {
        self.clock.borrow_mut().restart();
        match &mut self.engine {
            Engine::Eager(e) => {
                let out = e.learn(src, tgt)?;
                self.clock.borrow_mut().lap(3); // read-back ends with `learn`
                Ok(out)
            }
            Engine::Graphed(g) => {
                let clock = &self.clock;
                g.learn_timed(src, tgt, &mut |i| clock.borrow_mut().lap(i))
            }
        }
    }

    fn trainer(&self) -> &Trainer {
        self.engine.trainer()
    }
}
