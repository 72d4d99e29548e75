//! Chapter 12 — the same multi-head attention computed two ways: by hand
//! (chapter 02: scores, mask, softmax, × V, which materialises the whole [B, h,
//! L, L] matrix) and through libtorch's fused `scaled_dot_product_attention`,
//! which picks a FlashAttention style kernel that works block by block and
//! never stores that matrix.
use std::time::Instant;

use tch::{Device, Kind, Tensor};

use crate::attention::MultiHeadAttention;
use crate::transformer::make_causal_mask;

// ANCHOR: mask_conversion
/// Our masks say where attention is *forbidden* (true = masked); SDPA's bool
/// mask says where it is *allowed*. Passing ours unchanged silently attends to
/// exactly the wrong keys.
pub fn to_sdpa_mask(ours: &Tensor) -> Tensor {
    ours.logical_not()
}
// ANCHOR_END: mask_conversion

// ANCHOR: sdpa_forward
/// The fused path on `mha`'s own weights. `causal` uses SDPA's built-in causal
/// masking (no mask tensor at all, which is what lets the fast kernels run);
/// `mask` is one of our masks, converted.
pub fn sdpa_forward(
    mha: &MultiHeadAttention,
    x: &Tensor,
    causal: bool,
    mask: Option<&Tensor>,
) -> Tensor {
    let q = mha.project(x, &mha.W_q); // [B, h, L, d_k]
    let k = mha.project(x, &mha.W_k);
    let v = mha.project(x, &mha.W_v);
    let mask = mask.map(to_sdpa_mask);
    let y = Tensor::scaled_dot_product_attention(
        &q,
        &k,
        &v,
        mask.as_ref(),
        0.0,
        causal,
        None,
        false,
    ); // [B, h, L, d_k]
    mha.merge(&y).apply(&mha.W_o) // [B, L, d]
}

/// The hand-written path of chapter 02 with a causal mask.
pub fn manual_causal_forward(mha: &MultiHeadAttention, x: &Tensor) -> Tensor {
    let l = x.size()[1];
    mha.forward(x, x, x, Some(&make_causal_mask(l, x.device())), false)
        .0
}
// ANCHOR_END: sdpa_forward

/// Time per call and peak memory of one measured path.
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    pub ms: f64,
    /// Peak bytes of one call; None where they cannot be measured.
    pub peak_bytes: Option<u64>,
}

// ANCHOR: timing
/// Mean milliseconds per call of `f` after `warmup` untimed calls, over at
/// least `min_iters` calls and until `budget_s` seconds have passed (at most
/// `max_iters`). CUDA work is asynchronous, so the device is synchronised
/// before reading the clock.
pub fn time_ms(
    device: Device,
    warmup: usize,
    min_iters: usize,
    max_iters: usize,
    budget_s: f64,
    mut f: impl FnMut() -> Tensor,
) -> f64 {
    let sync = || {
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    for _ in 0..warmup {
        let _ = f();
    }
    sync();
    let start = Instant::now();
    let mut n = 0;
    while n < min_iters
        || (n < max_iters && start.elapsed().as_secs_f64() < budget_s)
    {
        let _ = f();
        n += 1;
    }
    sync();
    start.elapsed().as_secs_f64() * 1000.0 / n as f64
}
// ANCHOR_END: timing

/// One row of the sequence-length sweep.
#[derive(Debug, Clone, Copy)]
pub struct SweepRow {
    pub len: i64,
    pub manual: Option<Measurement>,
    pub sdpa: Option<Measurement>,
}

impl SweepRow {
    /// Hand-written time over SDPA time (how many times faster the fused path is).
    pub fn speedup(&self) -> Option<f64> {
        Some(self.manual?.ms / self.sdpa?.ms)
    }

    /// Hand-written peak memory over SDPA peak memory, when both are at least 1 MiB
    /// (below that the ratio of two rounding errors says nothing).
    pub fn memory_ratio(&self) -> Option<f64> {
        let (m, s) = (self.manual?.peak_bytes?, self.sdpa?.peak_bytes?);
        (m >= 1 << 20 && s >= 1 << 20).then(|| m as f64 / s as f64)
    }
}

/// Bytes of the [B, h, L, L] score matrix the hand-written path must store
/// (once for the scores, once more for the softmax output).
pub fn score_matrix_bytes(b: i64, h: i64, l: i64, kind: Kind) -> u64 {
    (b * h * l * l) as u64 * kind.elt_size_in_bytes() as u64
}

/// Slope of log(y) against log(x) between two points: 2 means y grows as x², 1
/// as x.
pub fn log_log_slope((x1, y1): (f64, f64), (x2, y2): (f64, f64)) -> f64 {
    (y2 / y1).ln() / (x2 / x1).ln()
}

/// Formats a byte count as MiB with no decimals (the seed's "MB" are MiB: 2**20).
pub fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("-".to_string(), |b| {
        format!("{:.0}", b as f64 / (1u64 << 20) as f64)
    })
}
