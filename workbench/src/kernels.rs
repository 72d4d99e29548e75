//! Which CPU kernels libtorch runs, and what the tests that train tell the
//! kernel matrix (`scripts/kernel-matrix.sh`).
//!
//! libtorch picks its vectorised kernels once per process from the CPU, and MKL
//! picks its matrix-product kernels the same way. They add numbers in different
//! orders, so a training run's last bits differ between an AVX2 and an AVX-512
//! laptop, and training makes the difference grow. Two variables force any path
//! on an x86 machine, so one machine can stand in for every student's:
//!
//! | variable | values |
//! |---|---|
//! | `ATEN_CPU_CAPABILITY` | `default`, `avx2`, `avx512` (up to what the CPU has) |
//! | `MKL_ENABLE_INSTRUCTIONS` | `SSE4_2`, `AVX2`, `AVX512` |
//!
//! A test whose verdict rests on a trained result reports the number it judged
//! with [`report`]; the matrix runs such tests under every path and tables how
//! far each number stands from its threshold.
use std::fmt;

use crate::sys;

/// ATen's kernel choice (read once, when libtorch starts).
pub const ATEN_VAR: &str = "ATEN_CPU_CAPABILITY";
/// MKL's kernel choice (read when MKL first runs).
pub const MKL_VAR: &str = "MKL_ENABLE_INSTRUCTIONS";
/// Added to the seeds of the tests that train, so that the matrix can try a
/// recipe on other draws of its data and weights. Unset: 0, the tests' own.
pub const SEED_VAR: &str = "COURSE_TEST_SEED";

/// The kernel path of this process, e.g. "ATen AVX512, MKL native" or
/// "ATen DEFAULT (forced), MKL SSE4_2 (forced)".
pub fn describe() -> String {
    let aten =
        sys::cpu_capability().unwrap_or_else(|e| format!("unknown ({e})"));
    let forced = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
    let aten = match forced(ATEN_VAR) {
        Some(_) => format!("{aten} (forced)"),
        None => aten,
    };
    let mkl = match forced(MKL_VAR) {
        Some(v) => format!("{v} (forced)"),
        None => "native".to_string(),
    };
    format!("ATen {aten}, MKL {mkl}")
}

/// The offset the tests that train add to their seeds: `COURSE_TEST_SEED`, or 0.
/// A value that is not a number stops the test with the reason, rather than
/// quietly running the default seeds under a name that says otherwise.
pub fn seed_offset() -> u64 {
    match std::env::var(SEED_VAR) {
        Err(_) => 0,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            panic!(
                "{SEED_VAR}={v:?}: expected a whole number (the seed offset)"
            )
        }),
    }
}

/// What a trained number must satisfy to pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    AtLeast(f64),
    AtMost(f64),
    /// Inclusive at both ends.
    Between(f64, f64),
}

impl Bound {
    /// How far `value` stands inside the bound: ≥ 0 passes, < 0 fails.
    pub fn margin(self, value: f64) -> f64 {
        match self {
            Bound::AtLeast(lo) => value - lo,
            Bound::AtMost(hi) => hi - value,
            Bound::Between(lo, hi) => (value - lo).min(hi - value),
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::AtLeast(lo) => write!(f, ">= {lo}"),
            Bound::AtMost(hi) => write!(f, "<= {hi}"),
            Bound::Between(lo, hi) => write!(f, "in {lo}..={hi}"),
        }
    }
}

/// The prefix of a report line, which the matrix script looks for.
pub const REPORT_PREFIX: &str = "kernel-matrix\t";

/// Writes one line to stderr for the kernel matrix: the test (the thread's
/// name, which is the test's under libtest), the seed offset, the ATen kernels
/// in use (so the matrix can see that a forced path took), what was measured,
/// its value, the bound and the margin. Call it before the assertion, so that a
/// failing run reports its number too. `cargo test` shows it only with
/// `--nocapture` or when the test fails.
pub fn report(quantity: &str, value: f64, bound: Bound) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let aten = sys::cpu_capability().unwrap_or_else(|_| "unknown".into());
    eprintln!(
        "{REPORT_PREFIX}{test}\t{}\t{aten}\t{quantity}\t{value}\t{bound}\t{}",
        seed_offset(),
        bound.margin(value)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_are_positive_inside_and_negative_outside() {
        assert_eq!(Bound::AtLeast(270.0).margin(300.0), 30.0);
        assert_eq!(Bound::AtLeast(270.0).margin(157.0), -113.0);
        assert_eq!(Bound::AtMost(0.75).margin(0.5), 0.25);
        assert_eq!(Bound::Between(1.0, 299.0).margin(250.0), 49.0);
        assert_eq!(Bound::Between(1.0, 299.0).margin(0.0), -1.0);
        assert_eq!(Bound::Between(1.0, 299.0).to_string(), "in 1..=299");
    }
}
