//! The Rust side of scripts/bench-vs-pytorch.sh: times N training steps of
//! chapter 09's recipe and where each step's time goes. Not a chapter: the
//! training step is written out again here, with a clock between its phases, so
//! that the lesson's `Trainer::train_step` stays free of profiling code.
//!
//! Also two checks for scripts/gpu-fast-path.sh: `--losses FILE` writes the
//! loss of every step (the untimed ones first), so that an eager and a graphed
//! run from the same seed can be compared, and `--check-graph-rng` shows that
//! two replays of a captured dropout draw different masks.
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use rand::SeedableRng;
use tch::{Device, Tensor};
use transformer_course::cli::{
    in_range, parse_threads, run_main, select_device, set_threads, DeviceChoice,
};
use transformer_course::config::TransformerConfig;
use transformer_course::data::epoch_batches;
use transformer_course::graph;
use transformer_course::optim::Optimizer;
use transformer_course::output::{check_writable, write_bytes_atomic};
use transformer_course::sys;
use transformer_course::train::{
    masked_cross_entropy, reverse_data, teacher_forcing, token_accuracy,
    Precision, TrainOptions, Trainer,
};

/// Time training steps of the reversal recipe (for
/// scripts/bench-vs-pytorch.sh).
#[derive(Parser)]
struct Args {
    /// Timed optimizer steps, after 5 untimed ones (1 to 100000).
    #[arg(long, default_value_t = 200, value_parser = in_range(1, 100_000))]
    steps: u64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
    /// fused = at::_fused_adam_ through the shim; tch = tch's nn::Adam.
    #[arg(long, value_enum, default_value_t = Optimizer::Fused)]
    optimizer: Optimizer,
    /// Default: fp32 on the CPU, bf16 autocast + TF32 on CUDA.
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Replay the training step as one CUDA graph (CUDA only).
    #[arg(long)]
    cuda_graph: bool,
    /// Write the loss of every step, untimed ones included, one per line.
    #[arg(long)]
    losses: Option<PathBuf>,
    /// Only check that graph replays draw fresh dropout masks, then exit.
    #[arg(long, conflicts_with_all = ["losses", "cuda_graph"])]
    check_graph_rng: bool,
}

const PHASES: [&str; 4] =
    ["forward+loss", "backward", "optimizer", "read-back"];

/// Untimed steps before the clock starts (first-call allocations, thread pools;
/// with --cuda-graph also the eager warm-up and the capture).
const UNTIMED: usize = 5;

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    set_threads(args.threads);
    let device = select_device(args.device)?;
    if args.check_graph_rng {
        return check_graph_rng(device);
    }
    if args.cuda_graph {
        graph::check_supported(device, args.optimizer)?;
    }
    if let Some(path) = &args.losses {
        check_writable(path)?;
    }
    let precision = args.precision.unwrap_or(Precision::recipe(device));
    precision.configure(device)?;
    let opts = TrainOptions {
        optimizer: args.optimizer,
        precision: Some(precision),
        cuda_graph: args.cuda_graph,
        ..TrainOptions::default()
    };
    let (train, _) = reverse_data(&opts);
    let mut trainer =
        Trainer::new(TransformerConfig::reverse_task(), device, &opts)?;
    let steps = args.steps as usize;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut batches = Vec::new();
    while batches.len() < steps + UNTIMED {
        batches.extend(epoch_batches(train.len(), opts.batch_size, &mut rng));
    }
    let mut losses = Vec::with_capacity(steps + UNTIMED);
    let mut seconds = [0.0; 4];
    let mut step = |idx: &Tensor, seconds: &mut [f64; 4]| {
        let src = train.src.index_select(0, idx);
        let tgt = train.tgt.index_select(0, idx);
        let (loss, _) = if args.cuda_graph {
            graphed_step(&mut trainer, &src, &tgt, seconds)
        } else {
            profiled_step(&mut trainer, &src, &tgt, seconds)
        };
        losses.push(loss);
    };
    for idx in &batches[..UNTIMED] {
        step(idx, &mut [0.0; 4]);
    }
    let t = Instant::now();
    for idx in &batches[UNTIMED..steps + UNTIMED] {
        step(idx, &mut seconds);
    }
    let secs = t.elapsed().as_secs_f64();
    let total: f64 = seconds.iter().sum();
    let names: &[&str] = if args.cuda_graph {
        &graph::PHASES
    } else {
        &PHASES
    };
    let parts: Vec<String> = names
        .iter()
        .zip(seconds)
        .map(|(name, s)| {
            format!(
                "{name} {:.2} ms ({:.0}%)",
                1000.0 * s / steps as f64,
                100.0 * s / total
            )
        })
        .collect();
    println!("profile: {}", parts.join(", "));
    let device = if device.is_cuda() { "cuda" } else { "cpu" };
    println!(
        "bench: impl=rust steps={steps} seconds={secs:.3} steps_per_s={:.2} threads={} device={device} optimizer={} precision={} cuda_graph={}",
        steps as f64 / secs,
        tch::get_num_threads(),
        args.optimizer.name(),
        precision.name(),
        if args.cuda_graph { "on" } else { "off" }
    );
    if let Some(path) = &args.losses {
        let text: String = losses.iter().map(|l| format!("{l:.6}\n")).collect();
        write_bytes_atomic(path, text.as_bytes())?;
        println!(
            "losses of {} steps written to {}",
            losses.len(),
            path.display()
        );
    }
    Ok(())
}

/// A stopwatch: `lap(i)` adds the time since the previous lap (or since the
/// stopwatch was made) to `seconds[i]`.
fn lap_clock(seconds: &mut [f64; 4]) -> impl FnMut(usize) + '_ {
    let mut t = Instant::now();
    move |phase| {
        let now = Instant::now();
        seconds[phase] += (now - t).as_secs_f64();
        t = now;
    }
}

/// `Trainer::train_step` with the wall time of each phase added to `seconds`
/// (on the CPU, where calls are synchronous; CUDA calls return before the work
/// is done).
fn profiled_step(
    trainer: &mut Trainer,
    src: &Tensor,
    tgt: &Tensor,
    seconds: &mut [f64; 4],
) -> (f64, f64) {
    let mut lap = lap_clock(seconds);
    let src = src.to_device(trainer.device);
    let (tgt_in, tgt_out) = teacher_forcing(&tgt.to_device(trainer.device));
    trainer.step += 1;
    trainer.opt.set_lr(trainer.lr_at(trainer.step));
    let bf16 = trainer.precision == Precision::Bf16;
    let logits = sys::autocast_on(trainer.device, bf16, || {
        trainer.model.forward(&src, &tgt_in, true)
    });
    let loss = masked_cross_entropy(&logits, &tgt_out, 0.0);
    lap(0);
    trainer.opt.zero_grad();
    loss.backward();
    lap(1);
    trainer.opt.step();
    lap(2);
    let out = tch::no_grad(|| {
        (loss.double_value(&[]), token_accuracy(&logits, &tgt_out))
    });
    lap(3);
    out
}

/// The graphed step, timed in its three phases (graph::PHASES): copying the
/// batch in, launching the replay, waiting for it and reading loss and accuracy
/// back.
fn graphed_step(
    trainer: &mut Trainer,
    src: &Tensor,
    tgt: &Tensor,
    seconds: &mut [f64; 4],
) -> (f64, f64) {
    let mut lap = lap_clock(seconds);
    graph::profiled_step(trainer, src, tgt, &mut lap)
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// Captures a dropout once, replays it twice and says whether the masks differ.
fn check_graph_rng(device: Device) -> anyhow::Result<()> {
    let n = 1 << 20;
    let (differ, dropped) = graph::dropout_masks_differ(device, n)?;
    let verdict = if (0.45..=0.55).contains(&differ) {
        "ok: every replay draws fresh masks"
    } else {
        "FAILED: the replays reuse their masks"
    };
    println!(
        "graph rng: dropout(p=0.5) of {n} ones, captured once and replayed twice: \
         {:.1}% dropped in the first replay, {:.1}% of the mask differs between \
         the two; {verdict}",
        100.0 * dropped,
        100.0 * differ
    );
    if !verdict.starts_with("ok") {
        anyhow::bail!("graph replays do not advance the dropout generator");
    }
    Ok(())
}
