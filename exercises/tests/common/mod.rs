//! Helpers shared by the exercise tests (each test file says `mod common;`).
//!
//! * `global_rng`/`seeded`: tch has one random generator per process and the tests of
//!   a file run on parallel threads. Every draw from it — seeding, building a layer,
//!   `Tensor::randn`, dropout in training mode — happens inside `seeded`, which holds
//!   one process-wide lock, so that a seed means the same numbers with
//!   `--test-threads 16` as with one thread.
//! * `assert_close`: compares tensors and says by how much and where they differ.
//! * `assert_not_called` and `assert_not_in_source` (in `shortcuts.rs`): fail a
//!   solution that reaches the course's (or libtorch's) own version of what its
//!   exercise asks for, however it is imported or wrapped: counted at run time where
//!   the course's code does the work, read with `syn` where libtorch does.
//! * One libtorch thread per test: the tensors are tiny, the tests run in parallel,
//!   and libtorch's spinning worker threads slow everything down many times over
//!   when there are more of them than cores.
//! * A panic hook that shortens libtorch's errors to their first sentence (the C++
//!   stack trace that follows it is of no use to a learner) and names the line of
//!   the exercise where the error happened.
#![allow(dead_code)] // not every test file uses every helper

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, Once};

use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::transformer::Transformer;
use workbench::cli::torch_error_sentence;

mod shortcuts;
#[allow(unused_imports)] // not every test file checks for shortcuts
pub use shortcuts::{assert_not_called, assert_not_in_source, forbidden_uses};

thread_local! {
    static HOLDS_RNG: Cell<bool> = const { Cell::new(false) };
}

/// The lock on tch's global generator. Prefer `seeded`.
pub fn global_rng() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    init();
    assert!(
        !HOLDS_RNG.with(Cell::get),
        "test bug: the RNG lock is taken twice on one thread (seeded inside seeded?)"
    );
    // A test that panicked while holding the lock poisons it; the lock itself is fine.
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with tch's global generator seeded with `seed`, and no other test
/// drawing from it meanwhile. Do every draw (layers, `Tensor::randn`, dropout in
/// training mode) inside; never call `seeded` inside `seeded`.
pub fn seeded<T>(seed: i64, f: impl FnOnce() -> T) -> T {
    let _lock = global_rng();
    HOLDS_RNG.with(|h| h.set(true));
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            HOLDS_RNG.with(|h| h.set(false));
        }
    }
    let _release = Release;
    tch::manual_seed(seed);
    f()
}

/// The message of a test that caught a shortcut: `found` says what the solution
/// did (its numbers can be right), `teaches` what the exercise asks for instead.
/// Its first words and its second line's are what `cargo xtask progress` looks
/// for (xtask's `SHORTCUT_MARK` and `SHORTCUT_TEACHES`): it reports the exercise as
/// solved by a shortcut, with the `teaches` sentence, not as done nor as wrong.
pub fn shortcut_message(found: &str, teaches: &str) -> String {
    format!(
        "shortcut: {found}. The numbers can come out right, but the exercise is not \
         done.\nthe exercise: {teaches}"
    )
}

/// Standard normal fp32 numbers of `shape`, drawn from `seed`.
pub fn randn(seed: i64, shape: &[i64]) -> Tensor {
    seeded(seed, || Tensor::randn(shape, (Kind::Float, Device::Cpu)))
}

/// A config for small, fast layers: d_model `d`, `h` heads, d_ff `d_ff`, no dropout,
/// the rest as the course's model (vocabulary 13, max_len 14, paper init).
pub fn config(d: i64, h: i64, d_ff: i64) -> TransformerConfig {
    init();
    TransformerConfig {
        d_model: d,
        num_heads: h,
        d_ff,
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    }
}

/// The course's model shrunk for fast tests: d_model 32, 4 heads, d_ff 64, no
/// dropout, `layers` layers.
pub fn tiny_config(layers: i64) -> TransformerConfig {
    TransformerConfig {
        num_layers: layers,
        ..config(32, 4, 64)
    }
}

/// The learning rate of step `step` (from 0) of a short training run: a linear
/// rise over `warmup` steps to `peak`, then half a cosine down to zero at
/// `total`. The tests that train end on a rate near zero, so the last steps
/// settle the weights instead of shaking them: a constant or slowly falling rate
/// left the result to the last few steps' rounding, which differs between CPU
/// kernel paths (the answer key's decoder-only model reversed 90 to 300 of 300
/// on the paths `scripts/kernel-matrix.sh` forces; with this schedule, 300 on
/// every one). It has the shape of `ex09_cosine`'s schedule (floor zero, steps
/// counted from 0), written here because a test must not train with a
/// learner's own answer.
pub fn annealed_rate(
    step: usize,
    peak: f64,
    warmup: usize,
    total: usize,
) -> f64 {
    if step < warmup {
        return peak * (step + 1) as f64 / warmup as f64;
    }
    let done = (step - warmup) as f64 / (total - warmup).max(1) as f64;
    peak * 0.5 * (1.0 + (std::f64::consts::PI * done.min(1.0)).cos())
}

/// Whatever `build` makes from a fresh CPU VarStore, with weights drawn from `seed`.
pub fn build<T>(
    seed: i64,
    build: impl FnOnce(nn::Path) -> T,
) -> (nn::VarStore, T) {
    seeded(seed, || {
        let vs = nn::VarStore::new(Device::Cpu);
        let made = build(vs.root());
        (vs, made)
    })
}

/// A `Transformer` with `cfg`, its weights drawn from `seed`.
pub fn model_with(
    cfg: TransformerConfig,
    seed: i64,
) -> (nn::VarStore, Transformer) {
    build(seed, |p| Transformer::new(p, cfg).expect("a valid config"))
}

/// `model_with(tiny_config(layers), seed)`.
pub fn tiny_model(seed: i64, layers: i64) -> (nn::VarStore, Transformer) {
    model_with(tiny_config(layers), seed)
}

/// The dropout of `eval_model`'s models.
pub const EVAL_DROPOUT: f64 = 0.1;

/// Said by every check of `eval_model`'s output that compares with an
/// inference-mode pass.
pub const EVAL: &str = "(the test model has dropout 0.1: a forward pass with \
                        train = true drops activations at random; evaluation uses \
                        train = false)";

/// `tiny_model` with dropout 0.1, for the tests of code that evaluates a model:
/// with dropout 0 a forward pass with `train = true` where `false` is meant
/// gives the same numbers, and the mistake would go unnoticed. Every draw of
/// such a wrong pass comes from the global generator, outside `seeded`, so it
/// differs from run to run — and from the inference-mode answer by far more
/// than any tolerance.
pub fn eval_model(seed: i64, layers: i64) -> (nn::VarStore, Transformer) {
    let cfg = TransformerConfig {
        dropout: EVAL_DROPOUT,
        ..tiny_config(layers)
    };
    model_with(cfg, seed)
}

/// Moves every LayerNorm of `vs` away from its initial weight 1 and bias 0 (new
/// values drawn from `seed`), so that using one LayerNorm in place of another, or
/// none, shows in the output.
pub fn perturb_layer_norms(vs: &nn::VarStore, seed: i64) {
    seeded(seed, || {
        tch::no_grad(|| {
            for (name, mut t) in vs.variables() {
                if name.split('.').any(|part| part.starts_with("ln")) {
                    let noise = Tensor::rand_like(&t) + 0.5;
                    t.copy_(&noise);
                }
            }
        })
    })
}

/// Token ids [rows.len(), L] from rows of equal length.
pub fn ids(rows: &[&[i64]]) -> Tensor {
    init();
    let l = rows[0].len() as i64;
    assert!(
        rows.iter().all(|r| r.len() as i64 == l),
        "test bug: ragged rows"
    );
    let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_slice(&flat).view([rows.len() as i64, l])
}

/// The largest |a − b| (f64), after checking that the shapes agree.
#[track_caller]
pub fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size(), "shapes differ");
    if a.numel() == 0 {
        return 0.0;
    }
    let d = (a.to_kind(Kind::Double) - b.to_kind(Kind::Double)).abs();
    d.max().double_value(&[])
}

/// Asserts that `got` and `want` have the same shape and differ by at most `tol`
/// anywhere. On failure it prints both shapes, the largest |Δ|, where it occurs and
/// both values there, after `what` (which should name the likely cause).
#[track_caller]
pub fn assert_close(got: &Tensor, want: &Tensor, tol: f64, what: &str) {
    init();
    let (gs, ws) = (got.size(), want.size());
    assert!(
        gs == ws,
        "{what}\n  shapes differ: got {gs:?}, want {ws:?} (a missing or extra dimension, \
         or a transpose?)"
    );
    if got.numel() == 0 {
        return;
    }
    let g = got.to_device(Device::Cpu).to_kind(Kind::Double);
    let w = want.to_device(Device::Cpu).to_kind(Kind::Double);
    let bad_g = g.isnan().sum(Kind::Int64).int64_value(&[]);
    let bad_w = w.isnan().sum(Kind::Int64).int64_value(&[]);
    if bad_g > bad_w {
        let at = unravel(
            g.isnan()
                .to_kind(Kind::Int64)
                .flatten(0, -1)
                .argmax(0, false),
            &gs,
        );
        panic!(
            "{what}\n  got {bad_g} NaN value(s), the first at {at:?} (want {:e} there); \
             shapes got {gs:?}, want {ws:?}",
            w.double_value(&at)
        );
    }
    // NaN where both are NaN, or the same infinity, counts as equal.
    let same = g
        .eq_tensor(&w)
        .logical_or(&g.isnan().logical_and(&w.isnan()));
    let diff = (&g - &w).abs().masked_fill(&same, 0.0).nan_to_num(
        f64::INFINITY,
        None,
        None,
    );
    let flat = diff.flatten(0, -1);
    let i = flat.argmax(0, false);
    let at = unravel(i.shallow_clone(), &gs);
    let d = flat.double_value(&[i.int64_value(&[])]);
    assert!(
        d <= tol,
        "{what}\n  largest |Δ| = {d:.3e} at {at:?}: got {:.6e}, want {:.6e} \
         (tolerance {tol:.0e}; shapes got {gs:?}, want {ws:?})",
        g.double_value(&at),
        w.double_value(&at)
    );
}

/// `assert_close` for two numbers.
#[track_caller]
pub fn assert_close_f64(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol || got == want,
        "{what}\n  got {got:.9e}, want {want:.9e}: |Δ| = {:.3e} (tolerance {tol:.0e})",
        (got - want).abs()
    );
}

/// Asserts that a tensor the exercise received is exactly as before the call.
/// `before` must be a real copy (`Tensor::copy`), taken before the call.
#[track_caller]
pub fn assert_unchanged(before: &Tensor, after: &Tensor, name: &str) {
    let same = before.size() == after.size() && before.equal(after);
    assert!(
        same,
        "input tensor `{name}` changed: the exercise wrote into its argument. A \
         shallow_clone() (or narrow, view, get…) shares storage with the original, so an \
         in-place fill_ on it changes the caller's tensor; work on a .copy()"
    );
}

/// The multi-index of flat position `i` in a tensor of shape `shape`.
fn unravel(i: Tensor, shape: &[i64]) -> Vec<i64> {
    let mut flat = i.int64_value(&[]);
    let mut at = vec![0; shape.len()];
    for (k, &n) in shape.iter().enumerate().rev() {
        at[k] = flat % n.max(1);
        flat /= n.max(1);
    }
    at
}

/// Sets up the test process once; every helper calls it. One libtorch thread, and
/// a panic hook that replaces libtorch's panics (`called Result::unwrap() on an Err
/// value: Torch("… Exception raised from …` and some 23 C++ frames) by their first
/// sentence and the line of exercises/src where they happened. Other panics keep
/// the default message.
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tch::set_num_threads(1);
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()));
            match text {
                Some(text) if text.contains("Torch(\"") => {
                    let thread = std::thread::current();
                    let name = thread.name().unwrap_or("<unnamed>");
                    let place = exercise_line().unwrap_or_else(|| {
                        info.location().map(|l| l.to_string()).unwrap_or_default()
                    });
                    eprintln!(
                        "thread '{name}' panicked at {place}:\n{}\n(libtorch's first \
                         sentence; its C++ stack trace is left out. The book's pitfalls \
                         page explains how to read such an error.)",
                        torch_error_sentence(&text)
                    );
                }
                _ => default(info),
            }
        }));
    });
}

/// The innermost frame of the panicking thread's stack that lies in the exercises
/// (the crate `exercises`), as `exercises/src/chNN_x.rs:LINE:COL`.
fn exercise_line() -> Option<String> {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let mut lines = trace.lines();
    while let Some(frame) = lines.next() {
        let symbol = frame.trim_start().split_once(": ").map_or("", |(_, s)| s);
        if symbol.starts_with("exercises::ch") {
            let at = lines.next()?.trim().strip_prefix("at ")?;
            let file = at.rsplit_once("/src/").map_or(at, |(_, f)| f);
            return Some(format!("exercises/src/{file}"));
        }
    }
    None
}

/// The code of exercise region `id` in `source` (the text of the exercise's file, from
/// `include_str!`): the lines between `// ANCHOR: id` and `// ANCHOR_END: id`, with
/// comments cut off, so that a hint that names a call does not count as using it.
/// Panics like the exercise's `todo!()` while the region still holds one.
pub fn region_code(source: &str, id: &str) -> String {
    let start = format!("// ANCHOR: {id}");
    let end = format!("// ANCHOR_END: {id}");
    let mut lines = source.lines().skip_while(|l| l.trim() != start);
    assert!(
        lines.next().is_some(),
        "test bug: no region {id} in the exercise's file (its markers moved?)"
    );
    let code = lines
        .take_while(|l| l.trim() != end)
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    // Not started: fail as the exercise's own todo!() does, so that `cargo xtask
    // progress` still calls it "not started".
    if code.contains("todo!(") {
        todo!("exercise {id}: see the book, chapter {}", &id[2..4]);
    }
    code
}
