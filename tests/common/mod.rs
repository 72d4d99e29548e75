//! Helpers shared by the integration tests (each test file includes this module).
#![allow(dead_code)] // not every test file uses every helper

use std::sync::{Mutex, MutexGuard};

use tch::{nn, Device};
use transformer_course::config::TransformerConfig;
use transformer_course::transformer::Transformer;

/// The repository's root. The tests are targets of the `chapters` package, so
/// cargo's manifest folder is chapters/, one below it.
pub fn repo_root() -> std::path::PathBuf {
    let chapters = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    chapters
        .parent()
        .expect("chapters/ is inside the repository")
        .to_path_buf()
}

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

/// What a test does when something it needs is missing. Locally it prints
/// `skipped: WHY` (shown with `cargo test -- --nocapture`, and in the output of a
/// failing run) and the test passes. Where the claim must be checked, it fails
/// instead: when one of `force` is set to 1, or, if `under_ci`, when CI=true (what
/// CI services set).
pub fn skip_or_fail(why: &str, force: &[&str], under_ci: bool) {
    let set = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    let ci = under_ci && std::env::var("CI").is_ok_and(|v| v == "true");
    if let Some(var) = force.iter().find(|v| set(v)) {
        panic!("{var}=1, so this test must run, but: {why}");
    }
    if ci {
        panic!("CI=true, so this test must run, but: {why}");
    }
    eprintln!("skipped: {why}");
}

/// The GPU for the CUDA half of a test, or None after saying `skipped: no GPU`.
/// With COURSE_REQUIRE_GPU=1 (scripts/gpu-fast-path.sh --require-gpu sets it) a
/// missing GPU fails the test instead. `what` names the part that needs the GPU.
pub fn cuda_or_skip(what: &str) -> Option<Device> {
    if tch::Cuda::is_available() {
        return Some(Device::Cuda(0));
    }
    skip_or_fail(
        &format!("no GPU ({what} runs on CUDA only)"),
        &["COURSE_REQUIRE_GPU"],
        false,
    );
    None
}
