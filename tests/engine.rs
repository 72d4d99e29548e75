//! The engine around chapter 09's lesson runs the lesson's step, unchanged: the
//! eager engine and the benchmark's timed learner give the plain `Trainer`'s
//! losses to the last bit, label smoothing and dropout included.
use tch::Device;
use transformer_course::config::TransformerConfig;
use transformer_course::data::make_dataset;
use transformer_course::train::{
    fit, reverse_data, Learner, TrainOptions, Trainer,
};
use workbench::bench::{BenchLearner, PHASES};
use workbench::engine::{self, EngineOptions};
use workbench::optim::{self, AdamKind};

mod common;

const STEPS: i64 = 6;

fn config() -> TransformerConfig {
    TransformerConfig {
        num_layers: 1,
        dropout: 0.1, // the masks must line up too
        ..common::tiny_config()
    }
}

fn recipe(label_smoothing: f64) -> TrainOptions {
    TrainOptions {
        seed: 7,
        warmup: 10,
        label_smoothing,
        ..TrainOptions::default()
    }
}

/// The losses of `STEPS` steps on fixed batches of 32.
fn losses(learner: &mut dyn Learner) -> Vec<f64> {
    let data = make_dataset((STEPS * 32) as usize, 3);
    common::losses_on_batches(learner, &data, STEPS, 32)
}

fn engine_losses(adam: AdamKind, label_smoothing: f64) -> Vec<f64> {
    let _rng = common::global_rng();
    let options = EngineOptions {
        adam,
        ..EngineOptions::default()
    };
    let recipe = recipe(label_smoothing);
    let mut l =
        engine::learner(config(), Device::Cpu, &recipe, &options).unwrap();
    losses(&mut l)
}

#[test]
fn the_benchmark_times_the_course_step_itself() {
    for adam in [AdamKind::Fused, AdamKind::Tch] {
        let course = engine_losses(adam, 0.1);
        let timed = {
            let _rng = common::global_rng();
            let options = EngineOptions {
                adam,
                ..EngineOptions::default()
            };
            let recipe = recipe(0.1);
            let mut b =
                BenchLearner::new(config(), Device::Cpu, &recipe, &options)
                    .unwrap();
            let l = losses(&mut b);
            assert_eq!(b.phases(), PHASES);
            let seconds = b.seconds();
            assert!(
                seconds.iter().all(|&s| s > 0.0),
                "a phase went untimed: {seconds:?}"
            );
            l
        };
        assert_eq!(
            course, timed,
            "{adam:?}: the benchmark's step is not the course's"
        );
    }
    // The smoothing reaches the step: without it the losses are others.
    assert_ne!(
        engine_losses(AdamKind::Fused, 0.1),
        engine_losses(AdamKind::Fused, 0.0)
    );
}

#[test]
fn the_engine_runs_the_plain_trainer_unchanged() {
    let plain = {
        let _rng = common::global_rng();
        let mut t = Trainer::new(config(), Device::Cpu, &recipe(0.1)).unwrap();
        losses(&mut t)
    };
    assert_eq!(plain, engine_losses(AdamKind::Tch, 0.1));
    // The fused kernel computes the same update, to float rounding.
    for (p, f) in plain.iter().zip(engine_losses(AdamKind::Fused, 0.1)) {
        assert!((p - f).abs() < 1e-4 * p.abs().max(1.0), "{p} vs {f}");
    }
}

/// `fit` with the engine's learner on a few hundred samples: one report per
/// epoch, a loss per step, and an observer that can stop the run.
#[test]
fn fit_reports_every_step_and_can_be_stopped() {
    use std::ops::ControlFlow;
    use transformer_course::train::{EpochReport, Observer};

    struct Count {
        steps: usize,
        epochs: Vec<usize>,
        stop_at: usize,
    }
    impl Observer for Count {
        fn on_step(
            &mut self,
            _: usize,
            batch: usize,
            of: usize,
            _: f64,
        ) -> ControlFlow<()> {
            assert!(batch >= 1 && batch <= of);
            self.steps += 1;
            if self.steps == self.stop_at {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        fn on_epoch(&mut self, r: &EpochReport) -> ControlFlow<()> {
            self.epochs.push(r.epoch);
            ControlFlow::Continue(())
        }
    }
    let _rng = common::global_rng();
    let opts = TrainOptions {
        epochs: 2,
        n_train: 128,
        n_val: 16,
        eval_samples: 16,
        batch_size: 32,
        ..recipe(0.0)
    };
    let (train, val) = reverse_data(&opts);
    let mut t = Trainer::new(config(), Device::Cpu, &opts).unwrap();
    t.opt = optim::adam(AdamKind::Fused, &t.vs).unwrap();
    let mut all = Count {
        steps: 0,
        epochs: vec![],
        stop_at: usize::MAX,
    };
    let h = fit(&mut t, &train, &val, &opts, &mut all).unwrap();
    assert_eq!((all.steps, all.epochs.clone()), (8, vec![1, 2]));
    assert_eq!((h.step_losses.len(), h.epochs.len()), (8, 2));
    assert_eq!(t.step, 8);
    let mut t = Trainer::new(config(), Device::Cpu, &opts).unwrap();
    let mut early = Count {
        steps: 0,
        epochs: vec![],
        stop_at: 3,
    };
    let h = fit(&mut t, &train, &val, &opts, &mut early).unwrap();
    assert_eq!((h.step_losses.len(), h.epochs.len(), t.step), (3, 0, 3));
}
