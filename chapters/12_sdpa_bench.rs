//! Chapter 12: hand-written attention against fused SDPA: same answer, different cost.
//! cargo run --release --bin 12_sdpa_bench
//! cargo run --release --bin 12_sdpa_bench -- --quick      (a laptop result in seconds)
use std::path::PathBuf;

use clap::Parser;
use tch::{nn, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::embedding::Init;
use transformer_course::sdpa::{
    log_log_slope, manual_causal_forward, mib, peak_memory, score_matrix_bytes, sdpa_forward, time_ms, Measurement, MemoryMethod, SweepRow,
};
use transformer_course::train::{device_name, select_device, DeviceChoice};
use transformer_course::transformer::make_padding_mask;

#[derive(Parser)]
#[command(about = "Hand-written multi-head attention vs scaled_dot_product_attention")]
struct Args {
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// Small settings: B=2, L=256, d=128, h=4, sweep to 1024.
    #[arg(long)]
    quick: bool,
    #[arg(long)]
    batch: Option<i64>,
    #[arg(long)]
    len: Option<i64>,
    #[arg(long)]
    d_model: Option<i64>,
    #[arg(long)]
    heads: Option<i64>,
    /// Longest sequence of the sweep (default: 2048 on CPU, 8192 on CUDA).
    #[arg(long)]
    sweep_max: Option<i64>,
    /// Where the log-log plot of the sweep goes.
    #[arg(long, default_value = "book/src/figures/12_sdpa_sweep.svg")]
    plot: PathBuf,
    #[arg(long)]
    threads: Option<usize>,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    // Before the first tensor: makes the CPU memory readings follow live tensors.
    transformer_course::sdpa::serve_large_allocations_with_mmap();
    transformer_course::train::set_threads(args.threads)?;
    let device = select_device(args.device)?;
    let (qb, ql, qd, qh, qmax) = if args.quick { (2, 256, 128, 4, 1024) } else { (8, 1024, 512, 8, if device.is_cuda() { 8192 } else { 2048 }) };
    let (b, l, d, h) = (args.batch.unwrap_or(qb), args.len.unwrap_or(ql), args.d_model.unwrap_or(qd), args.heads.unwrap_or(qh));
    let sweep_max = args.sweep_max.unwrap_or(qmax);
    anyhow::ensure!(b > 0 && l > 1 && sweep_max >= 128, "batch must be ≥ 1, len ≥ 2 and --sweep-max ≥ 128");
    let cuda = device.is_cuda();
    let dtype = if cuda { "bf16 autocast" } else { "fp32" };
    let method = MemoryMethod::for_device(device);
    println!("device={} dtype={dtype} libtorch={} threads={}", device_name(device), transformer_course::sys::LIBTORCH_VERSION, tch::get_num_threads());
    println!("memory = {}\n", method.describe());

    tch::manual_seed(0);
    let vs = nn::VarStore::new(device);
    let mha = MultiHeadAttention::new(vs.root(), d, h, 0.0, Init::Paper)?;

    // ANCHOR: agreement
    // 1. Same answer? fp32 everywhere (TF32 off), on a causal mask and on a padding mask.
    transformer_course::sys::set_allow_tf32(false)?;
    let x = Tensor::randn([b, l, d], (Kind::Float, device));
    let (diff_causal, diff_pad) = tch::no_grad(|| {
        let causal = (manual_causal_forward(&mha, &x) - sdpa_forward(&mha, &x, true, None)).abs().max().double_value(&[]);
        // Row i keeps its first l - 17·i tokens, the rest is padding (key mask, ours: true = masked).
        let ids = Tensor::ones([b, l], (Kind::Int64, device));
        for i in 1..b {
            let _ = ids.get(i).narrow(0, (l - 17 * i).max(1), l - (l - 17 * i).max(1)).fill_(0);
        }
        let pad = make_padding_mask(&ids); // [B, 1, 1, L]
        let manual = mha.forward(&x, &x, &x, Some(&pad), false).0;
        (causal, (manual - sdpa_forward(&mha, &x, false, Some(&pad))).abs().max().double_value(&[]))
    });
    println!("B={b} L={l} d_model={d} h={h}");
    println!("hand-written == SDPA (fp32, causal):       max |Δ| = {diff_causal:.2e}  {}", verdict(diff_causal));
    println!("hand-written == SDPA (fp32, padding mask): max |Δ| = {diff_pad:.2e}  {}", verdict(diff_pad));
    anyhow::ensure!(diff_causal < 1e-4 && diff_pad < 1e-4, "the two paths disagree: this is a bug, not a benchmark result");
    // ANCHOR_END: agreement

    if cuda {
        transformer_course::sys::set_cuda_autocast_bf16(true)?;
        transformer_course::sys::set_allow_tf32(true)?;
    }

    // ANCHOR: measure
    // 2. Cost at the chapter's size. Both paths under the same autocast setting.
    let measure = |len: i64| -> SweepRow {
        let x = Tensor::randn([b, len, d], (Kind::Float, device));
        let manual = || tch::no_grad(|| transformer_course::sys::autocast(cuda, || manual_causal_forward(&mha, &x)));
        let fused = || tch::no_grad(|| transformer_course::sys::autocast(cuda, || sdpa_forward(&mha, &x, true, None)));
        let one = |f: &dyn Fn() -> Tensor| -> Option<Measurement> {
            // Out of memory (or any libtorch error) ends that path's sweep, not the program.
            let ms = catch(|| time_ms(device, 2, 3, 20, 2.0, f))?;
            let peak_bytes = catch(|| peak_memory(method, device, f)).flatten();
            Some(Measurement { ms, peak_bytes })
        };
        SweepRow { len, manual: one(&manual), sdpa: one(&fused) }
    };
    let main = measure(l);
    let show = |name: &str, m: Option<Measurement>| match m {
        Some(m) => println!("{name} {dtype}: {:8.2} ms/call, peak memory {:>6} MiB", m.ms, mib(m.peak_bytes)),
        None => println!("{name} {dtype}: failed (out of memory?)"),
    };
    println!();
    show("hand-written", main.manual);
    show("SDPA        ", main.sdpa);
    println!(
        "the score matrix alone: [{b}, {h}, {l}, {l}] × {} bytes = {:.0} MiB, stored once for the scores and again for the softmax",
        if cuda { 2 } else { 4 },
        score_matrix_bytes(b, h, l, if cuda { Kind::BFloat16 } else { Kind::Float }) as f64 / (1u64 << 20) as f64
    );
    println!("reference (the source chapter, RTX 4090, bf16): hand-written 2.97 ms, 712 MB; SDPA 0.25 ms, 79 MB — not measured here");
    // ANCHOR_END: measure

    // ANCHOR: sweep
    // 3. How the cost grows with L.
    println!("\nsweep over L (B={b}, d_model={d}, h={h}, causal, {dtype})");
    println!("{:>6} {:>12} {:>10} {:>8} {:>12} {:>10} {:>8}", "L", "hand ms", "SDPA ms", "speedup", "hand MiB", "SDPA MiB", "mem ×");
    let mut rows = Vec::new();
    let mut len = 128;
    while len <= sweep_max {
        let r = measure(len);
        let ms = |m: Option<Measurement>| m.map_or("OOM".to_string(), |m| format!("{:.2}", m.ms));
        println!(
            "{:>6} {:>12} {:>10} {:>8} {:>12} {:>10} {:>8}",
            len,
            ms(r.manual),
            ms(r.sdpa),
            r.speedup().map_or("-".into(), |s| format!("{s:.1}×")),
            mib(r.manual.and_then(|m| m.peak_bytes)),
            mib(r.sdpa.and_then(|m| m.peak_bytes)),
            r.memory_ratio().map_or("-".into(), |s| format!("{s:.1}×")),
        );
        let stop = r.manual.is_none() && r.sdpa.is_none();
        rows.push(r);
        if stop {
            break;
        }
        len *= 2;
    }
    // ANCHOR_END: sweep
    report_slopes(&rows);
    transformer_course::plot::sweep_plot(&args.plot, &rows, &format!("{} · {dtype} · B={b}, d={d}, h={h}", device_name(device)))?;
    println!("\nplot written to {}", args.plot.display());
    Ok(())
}

fn verdict(diff: f64) -> &'static str {
    if diff < 1e-4 { "agree (atol 1e-4)" } else { "DISAGREE" }
}

/// Runs `f`, turning a libtorch panic (an out-of-memory error, say) into None.
fn catch<T>(f: impl FnOnce() -> T) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    std::panic::set_hook(hook);
    r
}

/// Growth exponents between the last two lengths both paths finished.
fn report_slopes(rows: &[SweepRow]) {
    let done: Vec<&SweepRow> = rows.iter().filter(|r| r.manual.and_then(|m| m.peak_bytes).is_some() && r.sdpa.and_then(|m| m.peak_bytes).is_some()).collect();
    if done.len() < 2 {
        return;
    }
    let (a, z) = (done[done.len() - 2], done[done.len() - 1]);
    let mem = |r: &SweepRow, f: fn(&SweepRow) -> Option<Measurement>| f(r).and_then(|m| m.peak_bytes).unwrap_or(1).max(1) as f64;
    let time = |r: &SweepRow, f: fn(&SweepRow) -> Option<Measurement>| f(r).map_or(1.0, |m| m.ms);
    let (lm, ls): (fn(&SweepRow) -> Option<Measurement>, fn(&SweepRow) -> Option<Measurement>) = (|r| r.manual, |r| r.sdpa);
    let (x1, x2) = (a.len as f64, z.len as f64);
    println!(
        "\ngrowth from L={} to L={} (log-log slope; 2 = quadratic, 1 = linear):\n  memory: hand-written {:.2}, SDPA {:.2}\n  time:   hand-written {:.2}, SDPA {:.2}",
        a.len,
        z.len,
        log_log_slope((x1, mem(a, lm)), (x2, mem(z, lm))),
        log_log_slope((x1, mem(a, ls)), (x2, mem(z, ls))),
        log_log_slope((x1, time(a, lm)), (x2, time(z, lm))),
        log_log_slope((x1, time(a, ls)), (x2, time(z, ls))),
    );
}
