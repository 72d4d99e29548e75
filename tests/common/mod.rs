//! Helpers shared by the integration tests (each test file includes this module).
#![allow(dead_code)] // not every test file uses every helper

use std::sync::{Mutex, MutexGuard};

use tch::{nn, Device};
use transformer_course::config::TransformerConfig;
use transformer_course::transformer::Transformer;

/// tch has one global random generator per process, and the tests of one file run
/// on parallel threads. Every test that seeds it, or draws from it (building a
/// model, dropout in train mode), holds this lock meanwhile, so that a seed means
/// the same numbers with `--test-threads 16` as with one thread. It also guards the
/// other process-wide switches (threads, autocast).
pub fn global_rng() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that panicked while holding the lock poisons it; the lock itself is fine.
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The course's model shrunk for fast tests: d_model 32, 4 heads, d_ff 64,
/// no dropout.
pub fn tiny_config() -> TransformerConfig {
    TransformerConfig {
        d_model: 32,
        num_heads: 4,
        d_ff: 64,
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    }
}

/// A model with `cfg`, its weights drawn from `seed`, on the CPU.
pub fn model_with(
    cfg: TransformerConfig,
    seed: i64,
) -> (nn::VarStore, Transformer) {
    let _rng = global_rng();
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = Transformer::new(vs.root(), cfg).expect("a valid config");
    (vs, model)
}

/// `model_with(tiny_config(), seed)`.
pub fn tiny_model(seed: i64) -> (nn::VarStore, Transformer) {
    model_with(tiny_config(), seed)
}

/// The losses of `steps` training steps of `learner`, on consecutive batches of
/// `batch` rows of `data` (the first batch is rows 0..batch).
pub fn losses_on_batches(
    learner: &mut dyn transformer_course::train::Learner,
    data: &transformer_course::data::ReverseDataset,
    steps: i64,
    batch: i64,
) -> Vec<f64> {
    use tch::{Kind, Tensor};
    (0..steps)
        .map(|s| {
            let range = (Kind::Int64, Device::Cpu);
            let idx = Tensor::arange_start(s * batch, (s + 1) * batch, range);
            let src = data.src.index_select(0, &idx);
            let tgt = data.tgt.index_select(0, &idx);
            learner.learn(&src, &tgt).unwrap().0
        })
        .collect()
}
