//! The arithmetic a training step runs in: fp32, or bf16 autocast (with TF32 for
//! the fp32 matrix products that remain on a GPU). The engine (`src/engine.rs`)
//! applies it around chapter 09's step; the step itself does not know.
use anyhow::{bail, Result};
use tch::Device;

use crate::sys;

/// The arithmetic of the forward pass. The loss is fp32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// Everything in fp32.
    Fp32,
    /// bf16 autocast: matrix products in bf16, the rest as autocast decides.
    Bf16,
}

// ANCHOR: precision
/// Turns on the CUDA precision recipe: bf16 autocast for the forward pass and TF32
/// for the fp32 matrix products that remain. Returns a label for the logs.
pub fn configure_precision(device: Device) -> Result<&'static str> {
    if device.is_cuda() {
        sys::set_cuda_autocast_bf16(true)?;
        sys::set_allow_tf32(true)?;
        Ok("bf16 autocast + TF32")
    } else {
        Ok("fp32")
    }
}
// ANCHOR_END: precision

impl Precision {
    /// The course's recipe: bf16 autocast on CUDA, fp32 on the CPU.
    pub fn recipe(device: Device) -> Precision {
        if device.is_cuda() {
            Precision::Bf16
        } else {
            Precision::Fp32
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
        }
    }

    /// Sets libtorch up for this precision on `device` (see
    /// [`configure_precision`]); returns the label for the logs.
    pub fn configure(self, device: Device) -> Result<&'static str> {
        match (self, device.is_cuda()) {
            (Precision::Bf16, true) | (Precision::Fp32, false) => {
                configure_precision(device)
            }
            (Precision::Bf16, false) => {
                sys::set_cpu_autocast_bf16()?;
                Ok("bf16 autocast")
            }
            (Precision::Fp32, true) => bail!(
                "fp32 training is CPU-only for now: the CUDA recipe is bf16 \
                 autocast + TF32"
            ),
        }
    }

    /// Runs `f` (a whole training step) under this precision's autocast on
    /// `device`. Autocast changes only the forward pass's operations: the
    /// backward pass and Adam get their inputs in the dtypes the forward pass
    /// chose, so wrapping the step is the same arithmetic as wrapping the
    /// forward pass alone.
    pub fn autocast<T>(self, device: Device, f: impl FnOnce() -> T) -> T {
        match self {
            Precision::Fp32 => f(),
            Precision::Bf16 => sys::autocast_on(device, true, f),
        }
    }
}
