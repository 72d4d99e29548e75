//! The Rust side of scripts/bench-vs-pytorch.sh: times N training steps of
//! chapter 09's recipe and where each step's time goes. Not a chapter. The step
//! is the lesson's own `Trainer::train_step`, run by the engine exactly as
//! `09_train_reverse` runs it; the phases are timed from outside
//! (`workbench::bench`).
//!
//! Also two checks for scripts/gpu-fast-path.sh: `--losses FILE` writes the
//! loss of every step (the untimed ones first), so that an eager and a graphed
//! run from the same seed can be compared, and `--check-graph-rng` shows that
//! two replays of a captured dropout draw different masks.
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use rand::SeedableRng;
use tch::Device;
use transformer_course::config::TransformerConfig;
use transformer_course::data::epoch_batches;
use transformer_course::train::{reverse_data, Learner, TrainOptions};
use workbench::bench::BenchLearner;
use workbench::cli::{
    cuda_graph_advice, in_range, parse_threads, run_main, select_device,
    set_threads, DeviceChoice,
};
use workbench::engine::EngineOptions;
use workbench::graph;
use workbench::optim::AdamKind;
use workbench::output::{check_writable, write_bytes_atomic};
use workbench::precision::Precision;

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
    #[arg(long, value_enum, default_value_t = AdamKind::Fused)]
    optimizer: AdamKind,
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
        graph::check_supported(device, args.optimizer)
            .map_err(|why| cuda_graph_advice(&why))?;
    }
    if let Some(path) = &args.losses {
        check_writable(path)?;
    }
    let engine = EngineOptions {
        adam: args.optimizer,
        precision: args.precision,
        cuda_graph: args.cuda_graph,
    };
    let precision = engine.precision_on(device);
    precision.configure(device)?;
    let opts = TrainOptions::default();
    let (train, _) = reverse_data(&opts);
    let config = TransformerConfig::reverse_task();
    let mut learner = BenchLearner::new(config, device, &opts, &engine)?;
    let steps = args.steps as usize;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut batches = Vec::new();
    while batches.len() < steps + UNTIMED {
        batches.extend(epoch_batches(train.len(), opts.batch_size, &mut rng));
    }
    let mut losses = Vec::with_capacity(steps + UNTIMED);
    let mut t = Instant::now();
    for (i, idx) in batches[..steps + UNTIMED].iter().enumerate() {
        if i == UNTIMED {
            learner.reset();
            t = Instant::now();
        }
        let src = train.src.index_select(0, idx);
        let tgt = train.tgt.index_select(0, idx);
        losses.push(learner.learn(&src, &tgt)?.0);
    }
    let secs = t.elapsed().as_secs_f64();
    let seconds = learner.seconds();
    let total: f64 = seconds.iter().sum();
    let parts: Vec<String> = learner
        .phases()
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

/// Captures a dropout once, replays it twice and says whether the masks differ.
fn check_graph_rng(device: Device) -> anyhow::Result<()> {
    graph::check_supported(device, AdamKind::Fused)
        .map_err(|why| cuda_graph_advice(&why))?;
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
