//! Chapter 12: hand-written attention against fused SDPA: same answer,
//! different cost. cargo run --release --bin 12_sdpa_bench cargo run --release
//! --bin 12_sdpa_bench -- --quick      (a laptop result in seconds)
use std::path::PathBuf;

use anyhow::{ensure, Result};
use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::config::TransformerConfig;
use transformer_course::sdpa::{
    log_log_slope, manual_causal_forward, mib, score_matrix_bytes,
    sdpa_forward, time_ms, Measurement, SweepRow,
};
use transformer_course::transformer::make_padding_mask;
use workbench::cli::{
    device_name, in_range, parse_threads, run_main, select_device, set_threads,
    DeviceChoice,
};
use workbench::limits::{self, attention_cost, fits, longest_sweep};
use workbench::memory::{
    peak_memory, serve_large_allocations_with_mmap, MemoryMethod,
};
use workbench::output::{bytes_text, check_writable};
use workbench::plot::{parse_figure_path, save, sweep_plot};
use workbench::sys;

/// Hand-written multi-head attention vs scaled_dot_product_attention.
#[derive(Parser)]
#[command(allow_negative_numbers = true)]
struct Args {
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// Small settings: B=2, L=256, d=128, h=4, sweep to 1024.
    #[arg(long)]
    quick: bool,
    /// Batch size (1 to 1024).
    #[arg(long, value_parser = in_range(1, 1024))]
    batch: Option<u64>,
    /// Sequence length of the main measurement (2 to 65536).
    #[arg(long, value_parser = in_range(2, 65536))]
    len: Option<u64>,
    /// Model width (2 to 16384), divisible by --heads.
    #[arg(long, value_parser = in_range(2, 16384))]
    d_model: Option<u64>,
    /// Attention heads (1 to 256).
    #[arg(long, value_parser = in_range(1, 256))]
    heads: Option<u64>,
    /// Longest sequence of the sweep, 128 to 65536 (default: 2048 on CPU, 8192 on
    /// CUDA).
    #[arg(long, value_parser = in_range(128, 65536))]
    sweep_max: Option<u64>,
    /// Where the log-log plot of the sweep goes (.svg or .png).
    #[arg(long, default_value = "out/12_sdpa_sweep.svg", value_parser = parse_figure_path)]
    plot: PathBuf,
    /// CPU threads for libtorch (default: all cores).
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
}

/// The sizes of one run.
#[derive(Clone, Copy)]
struct Sizes {
    b: i64,
    l: i64,
    d: i64,
    h: i64,
    sweep_max: i64,
}

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> Result<()> {
    // Before the first tensor: makes the CPU memory readings follow live tensors.
    serve_large_allocations_with_mmap();
    check_writable(&args.plot)?;
    set_threads(args.threads);
    let device = select_device(args.device)?;
    let mut s = sizes(&args, device)?;
    let cuda = device.is_cuda();
    let dtype = if cuda { "bf16 autocast" } else { "fp32" };
    let method = MemoryMethod::for_device(device);
    println!(
        "device={} dtype={dtype} libtorch={} threads={}",
        device_name(device),
        sys::LIBTORCH_VERSION,
        tch::get_num_threads()
    );
    println!("memory = {}\n", method.describe());
    if !cuda {
        // Out of memory on the CPU is no error libtorch can catch: the kernel
        // kills the process. Refuse, or shorten the sweep, before allocating.
        s.sweep_max = within_memory(s)?;
    }

    tch::manual_seed(0);
    let vs = nn::VarStore::new(device);
    let cfg = TransformerConfig {
        d_model: s.d,
        num_heads: s.h,
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let mha = MultiHeadAttention::new(vs.root(), &cfg)?;

    agreement(&mha, s, device)?;
    if cuda {
        sys::set_cuda_autocast_bf16(true)?;
        sys::set_allow_tf32(true)?;
    }
    let measure = |len: i64| measure(&mha, s.b, len, s.d, device, method);
    let main = measure(s.l);
    report_main(&main, s, dtype, cuda);
    let rows = sweep(measure, s, dtype);
    report_slopes(&rows);
    let subtitle = format!(
        "{} · {dtype} · B={}, d={}, h={}",
        device_name(device),
        s.b,
        s.d,
        s.h
    );
    save(&args.plot, |format| sweep_plot(format, &rows, &subtitle))?;
    println!("\nplot written to {}", args.plot.display());
    Ok(())
}

/// Refuses a main measurement, or a first sweep length, that would not fit in
/// the memory this process can have (free memory, or what `ulimit -v` leaves),
/// warns before a slow one, and returns the longest sweep length that fits.
fn within_memory(s: Sizes) -> Result<i64> {
    let Some(available) = limits::memory_headroom() else {
        return Ok(s.sweep_max);
    };
    let cost = |l| attention_cost(s.b, l, s.d, s.h);
    // The main measurement at --len, then the sweep, which starts at 128.
    for (l, what) in [(s.l, "--len"), (128, "the sweep's first length,")] {
        let need = cost(l).bytes;
        ensure!(
            fits(need, available),
            "B={} L={l} ({what}) d_model={} h={} needs about {} for the \
             hand-written path, more than 90 % of the {} available to this \
             process (free memory, or what ulimit -v leaves): give a smaller \
             --len, --batch or --d-model",
            s.b,
            s.d,
            s.h,
            bytes_text(need),
            bytes_text(available)
        );
    }
    let gflop = cost(s.l).flops / 1e9;
    if gflop > 300.0 {
        eprintln!(
            "note: one call of the hand-written path costs about {gflop:.0} \
             GFLOP here, and each measurement makes at least five: this takes \
             minutes"
        );
    }
    let max = longest_sweep(s.b, s.d, s.h, s.sweep_max, available);
    if max * 2 <= s.sweep_max {
        println!(
            "(the sweep stops at L={max}: L={} would need about {}, and {} is \
             available)",
            max * 2,
            bytes_text(cost(max * 2).bytes),
            bytes_text(available)
        );
    }
    Ok(max)
}

fn sizes(args: &Args, device: Device) -> Result<Sizes> {
    let (b, l, d, h, max) = if args.quick {
        (2, 256, 128, 4, 1024)
    } else {
        (8, 1024, 512, 8, if device.is_cuda() { 8192 } else { 2048 })
    };
    let pick = |v: Option<u64>, default: i64| v.map_or(default, |v| v as i64);
    let s = Sizes {
        b: pick(args.batch, b),
        l: pick(args.len, l),
        d: pick(args.d_model, d),
        h: pick(args.heads, h),
        sweep_max: pick(args.sweep_max, max),
    };
    ensure!(
        s.d % s.h == 0,
        "--d-model {} must be divisible by --heads {}",
        s.d,
        s.h
    );
    Ok(s)
}

// ANCHOR: agreement
/// 1. Same answer? fp32 everywhere (TF32 off), on a causal and on a padding mask.
fn agreement(mha: &MultiHeadAttention, s: Sizes, device: Device) -> Result<()> {
    let Sizes { b, l, d, h, .. } = s;
    sys::set_allow_tf32(false)?;
    let x = Tensor::randn([b, l, d], (Kind::Float, device));
    let max_diff = |a: Tensor, c: Tensor| (a - c).abs().max().double_value(&[]);
    let (diff_causal, diff_pad) = tch::no_grad(|| {
        let causal = max_diff(
            manual_causal_forward(mha, &x),
            sdpa_forward(mha, &x, true, None),
        );
        // Row i keeps its first l - 17·i tokens, the rest is padding.
        let ids = Tensor::ones([b, l], (Kind::Int64, device));
        for i in 1..b {
            let keep = (l - 17 * i).max(1);
            let _ = ids.get(i).narrow(0, keep, l - keep).fill_(0);
        }
        let pad = make_padding_mask(&ids); // [B, 1, 1, L], ours: true = masked
        let manual = mha.forward(&x, &x, &x, Some(&pad), false).0;
        (
            causal,
            max_diff(manual, sdpa_forward(mha, &x, false, Some(&pad))),
        )
    });
    println!("B={b} L={l} d_model={d} h={h}");
    println!("hand-written vs SDPA, fp32, max |Δ|:");
    println!(
        "  causal mask   {diff_causal:.2e}  {}",
        verdict(diff_causal)
    );
    println!("  padding mask  {diff_pad:.2e}  {}", verdict(diff_pad));
    ensure!(
        diff_causal < 1e-4 && diff_pad < 1e-4,
        "the two paths disagree: this is a bug, not a benchmark result"
    );
    Ok(())
}
// ANCHOR_END: agreement

// ANCHOR: measure
/// 2. Cost of both paths at one length, under the same autocast setting.
fn measure(
    mha: &MultiHeadAttention,
    b: i64,
    len: i64,
    d: i64,
    device: Device,
    method: MemoryMethod,
) -> SweepRow {
    let cuda = device.is_cuda();
    let x = Tensor::randn([b, len, d], (Kind::Float, device));
    let manual = || {
        tch::no_grad(|| sys::autocast(cuda, || manual_causal_forward(mha, &x)))
    };
    let fused = || {
        tch::no_grad(|| {
            sys::autocast(cuda, || sdpa_forward(mha, &x, true, None))
        })
    };
    let one = |f: &dyn Fn() -> Tensor| -> Option<Measurement> {
        // Out of memory (or any libtorch error) ends that path's sweep, not the
        // program.
        let ms = catch(|| time_ms(device, 2, 3, 20, 2.0, f))?;
        let peak_bytes = catch(|| peak_memory(method, device, f)).flatten();
        Some(Measurement { ms, peak_bytes })
    };
    SweepRow {
        len,
        manual: one(&manual),
        sdpa: one(&fused),
    }
}
// ANCHOR_END: measure

fn report_main(main: &SweepRow, s: Sizes, dtype: &str, cuda: bool) {
    let Sizes { b, l, h, .. } = s;
    let show = |name: &str, m: Option<Measurement>| match m {
        Some(m) => println!(
            "{name} {dtype}: {:8.2} ms/call, peak memory {:>6} MiB",
            m.ms,
            mib(m.peak_bytes)
        ),
        None => println!("{name} {dtype}: failed (out of memory?)"),
    };
    println!();
    show("hand-written", main.manual);
    show("SDPA        ", main.sdpa);
    // Under CUDA autocast the product Q Kᵀ comes out in bf16, softmax runs
    // and returns fp32, and the product with V takes a bf16 copy of that.
    let (kind, stored) = if cuda {
        (
            Kind::BFloat16,
            "in bf16 for the scores, again in fp32 (twice that) for\n  \
             the softmax, and once more in bf16 for the product with V",
        )
    } else {
        (
            Kind::Float,
            "stored once for the scores and again for the softmax",
        )
    };
    let bytes = kind.elt_size_in_bytes();
    println!(
        "the score matrix alone: [{b}, {h}, {l}, {l}] × {bytes} bytes = {:.0} \
         MiB,\n  {stored}",
        score_matrix_bytes(b, h, l, kind) as f64 / (1u64 << 20) as f64
    );
    println!(
        "reference, the PyTorch original (RTX 4090, bf16, not measured here):"
    );
    println!("  hand-written 2.97 ms, 712 MB; SDPA 0.25 ms, 79 MB");
}

// ANCHOR: sweep
/// 3. How the cost grows with L: doubling until --sweep-max or until both paths
///    fail.
fn sweep(
    measure: impl Fn(i64) -> SweepRow,
    s: Sizes,
    dtype: &str,
) -> Vec<SweepRow> {
    println!(
        "\nsweep over L (B={}, d_model={}, h={}, causal, {dtype})",
        s.b, s.d, s.h
    );
    println!(
        "{:>6} {:>12} {:>10} {:>8} {:>12} {:>10} {:>8}",
        "L", "hand ms", "SDPA ms", "speedup", "hand MiB", "SDPA MiB", "mem ×"
    );
    let mut rows = Vec::new();
    let mut len = 128;
    while len <= s.sweep_max {
        let r = measure(len);
        print_row(len, &r); // "OOM" where a path ran out of memory
        let stop = r.manual.is_none() && r.sdpa.is_none();
        rows.push(r);
        if stop {
            break;
        }
        len *= 2;
    }
    rows
}
// ANCHOR_END: sweep

/// One line of the sweep's table.
fn print_row(len: i64, r: &SweepRow) {
    let ms = |m: Option<Measurement>| {
        m.map_or("OOM".to_string(), |m| format!("{:.2}", m.ms))
    };
    let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.1}×"));
    println!(
        "{:>6} {:>12} {:>10} {:>8} {:>12} {:>10} {:>8}",
        len,
        ms(r.manual),
        ms(r.sdpa),
        ratio(r.speedup()),
        mib(r.manual.and_then(|m| m.peak_bytes)),
        mib(r.sdpa.and_then(|m| m.peak_bytes)),
        ratio(r.memory_ratio()),
    );
}

fn verdict(diff: f64) -> &'static str {
    if diff < 1e-4 {
        "agree (atol 1e-4)"
    } else {
        "DISAGREE"
    }
}

/// Runs `f`, turning a libtorch panic (an out-of-memory error, say) into None.
fn catch<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// Growth exponents between the last two lengths both paths finished.
fn report_slopes(rows: &[SweepRow]) {
    type Pick = fn(&SweepRow) -> Option<Measurement>;
    let (hand, fused): (Pick, Pick) = (|r| r.manual, |r| r.sdpa);
    fn peak(r: &SweepRow, f: Pick) -> Option<u64> {
        f(r).and_then(|m| m.peak_bytes)
    }
    let done: Vec<&SweepRow> = rows
        .iter()
        .filter(|r| peak(r, hand).is_some() && peak(r, fused).is_some())
        .collect();
    let [.., a, z] = done.as_slice() else { return };
    let mem = |r: &SweepRow, f: Pick| peak(r, f).unwrap_or(1).max(1) as f64;
    let time = |r: &SweepRow, f: Pick| f(r).map_or(1.0, |m| m.ms);
    let (x1, x2) = (a.len as f64, z.len as f64);
    let slope = |y: fn(&SweepRow, Pick) -> f64, f: Pick| {
        log_log_slope((x1, y(a, f)), (x2, y(z, f)))
    };
    println!(
        "\ngrowth from L={} to L={} (log-log slope; 2 = quadratic, 1 = linear):\n  memory: hand-written {:.2}, SDPA {:.2}\n  time:   hand-written {:.2}, SDPA {:.2}",
        a.len,
        z.len,
        slope(mem, hand),
        slope(mem, fused),
        slope(time, hand),
        slope(time, fused),
    );
}
