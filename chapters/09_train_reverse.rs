//! Chapter 09: train the Transformer to reverse digit sequences.
//! cargo run --release --bin 09_train_reverse
//! cargo run --release --bin 09_train_reverse -- --init framework-default \
//!     --out checkpoints/framework-default.safetensors
//! cargo run --release --bin 09_train_reverse -- --device cuda --cuda-graph
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::generate::{exact_match, reverse_digits};
use transformer_course::layers::parameter_count;
use transformer_course::train::{
    fit, reverse_data, History, Learner, TrainOptions, Trainer, DEFAULT_SEED,
};
use workbench::checkpoint::{
    checkpoint_bytes, checkpoint_size, DEFAULT_CHECKPOINT,
};
use workbench::cli::{
    cuda_graph_advice, device_name, in_range, init_parser, parse_threads,
    run_main, select_device, set_threads, thousands, DeviceChoice, EpochLog,
};
use workbench::engine::{self, EngineOptions};
use workbench::graph;
use workbench::history::{history_path, history_tsv, read_history, RunHistory};
use workbench::interrupt;
use workbench::optim::AdamKind;
use workbench::output::{
    check_outputs_and_inputs, rescued, reserve, Batch, Reserved,
};
use workbench::plot::{
    exact_match_plot, line_chart, parse_figure_path, Format, LineChart,
};
use workbench::precision::Precision;

/// Train the encoder-decoder Transformer on the sequence-reversal task.
#[derive(Parser)]
#[command(allow_negative_numbers = true)]
#[command(group = clap::ArgGroup::new("plots").multiple(true).args(["plot", "loss_plot"]))]
struct Args {
    /// Passes over the 20,000 training samples (1 to 1000).
    #[arg(long, default_value_t = 10, value_parser = in_range(1, 1000))]
    epochs: u64,
    /// Training samples per epoch (1 to 1,000,000); fewer than the recipe's
    /// 20,000 make a quick try, not the chapter's result.
    #[arg(long, default_value_t = 20_000, value_parser = in_range(1, 1_000_000))]
    train_samples: u64,
    /// Seeds the weights, the dropout masks and the shuffling
    /// (scripts/seed-spread.sh shows how much the result depends on it; the
    /// default is the median of five).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Seeds the data: training set from this seed, validation set from seed + 1.
    #[arg(long, default_value_t = 0, value_parser = in_range(0, u64::MAX - 1))]
    data_seed: u64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// Where the checkpoint goes (a .history.tsv with the epoch table goes
    /// beside it). Its full size is set aside there before training starts, so
    /// a disk without room is found at once. Must not be a symbolic link.
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    out: PathBuf,
    /// On Ctrl-C or a signal that ends a job (SIGTERM, SIGHUP, SIGQUIT,
    /// SIGUSR1, SIGXCPU), stop after the current epoch and save the model
    /// trained so far (the exit code is then 1, or 0 if that epoch was the
    /// last). Without it, such a signal ends the run at once and saves nothing.
    #[arg(long)]
    save_on_interrupt: bool,
    /// CPU threads for libtorch (default: all cores).
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
    /// paper = the course's init; framework-default = PyTorch's defaults (the slow
    /// learner of this chapter); tch-default = tch's own defaults.
    #[arg(long, value_parser = init_parser(), default_value = Init::Paper.name())]
    init: Init,
    /// Other runs' .history.tsv files to draw beside this one in --plot and
    /// --loss-plot.
    #[arg(long, num_args = 1.., requires = "plots")]
    compare: Vec<PathBuf>,
    /// Draw validation exact match per epoch (this run and --compare runs) to this
    /// .svg or .png file.
    #[arg(long, value_parser = parse_figure_path)]
    plot: Option<PathBuf>,
    /// Draw the training loss of every step (this run and --compare runs).
    #[arg(long, value_parser = parse_figure_path)]
    loss_plot: Option<PathBuf>,
    /// Draw the learning rate of every step of this run's schedule.
    #[arg(long, value_parser = parse_figure_path)]
    schedule_plot: Option<PathBuf>,
    /// fused = libtorch's multi-tensor Adam kernel (at::_fused_adam_); tch =
    /// tch's nn::Adam, one variable at a time. The same update either way.
    #[arg(long, value_enum, default_value_t = AdamKind::Fused)]
    optimizer: AdamKind,
    /// fp32, or bf16 autocast (the loss stays fp32). Default: fp32 on the CPU,
    /// bf16 autocast + TF32 on CUDA (the only CUDA precision for now).
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Capture the training step once as a CUDA graph and replay it for every
    /// batch (CUDA only, with the fused optimizer).
    #[arg(long)]
    cuda_graph: bool,
}

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    // Everything that could stop the run at its end is checked before it starts.
    let history_file = history_path(&args.out);
    let plots = [&args.plot, &args.loss_plot, &args.schedule_plot];
    let inputs: Vec<(&str, &Path)> = args
        .compare
        .iter()
        .map(|p| ("--compare", p.as_path()))
        .collect();
    check_outputs_and_inputs(&output_names(&args, &history_file), &inputs)?;
    let config = TransformerConfig {
        init: args.init,
        ..TransformerConfig::reverse_task()
    };
    if args.save_on_interrupt {
        interrupt::stop_on_interrupt(
            "interrupted: the model will be saved at the end of this epoch \
             (interrupt again to quit without saving)",
        );
        interrupt::set_exit_note("interrupted again: nothing was saved");
    } else {
        interrupt::set_exit_note(
            "interrupted: nothing was saved (--save-on-interrupt keeps the \
             model trained so far)",
        );
    }
    let others = args
        .compare
        .iter()
        .map(|p| read_history(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let opts = TrainOptions {
        epochs: args.epochs as usize,
        seed: args.seed,
        data_seed: args.data_seed,
        n_train: args.train_samples as usize,
        ..TrainOptions::default()
    };
    // The space of every output, taken now: a full disk is found in a second.
    let reserved = reserve_outputs(&args, &config, &opts, &others)?;
    set_threads(args.threads);
    let device = select_device(args.device)?;
    if args.cuda_graph {
        graph::check_supported(device, args.optimizer)
            .map_err(|why| cuda_graph_advice(&why))?;
    }
    let engine_opts = EngineOptions {
        adam: args.optimizer,
        precision: args.precision,
        cuda_graph: args.cuda_graph,
    };
    let chosen = engine_opts.precision_on(device);
    let precision = chosen
        .configure(device)
        .with_context(|| format!("--precision {}", chosen.name()))?;
    let (train, val) = reverse_data(&opts);
    let mut learner = engine::learner(config, device, &opts, &engine_opts)?;
    println!(
        "device={} precision={precision} threads={}",
        device_name(device),
        tch::get_num_threads(),
    );
    println!(
        "parameters={} init={} seed={} data_seed={}",
        thousands(parameter_count(&learner.trainer().vs)),
        args.init.name(),
        opts.seed,
        opts.data_seed
    );
    println!(
        "optimizer={} cuda_graph={}",
        args.optimizer.name(),
        if args.cuda_graph { "on" } else { "off" }
    );

    // ANCHOR: main_loop
    let mut log = EpochLog::new();
    let history = fit(&mut learner, &train, &val, &opts, &mut log)?;
    let trainer = learner.trainer();
    let t = Instant::now();
    let em = exact_match(&trainer.model, &val.src, &val.tgt, opts.eval_batch);
    let secs = t.elapsed().as_secs_f64();
    println!(
        "validation exact match on all {} samples: {em:.3}  ({secs:.1}s)",
        val.len()
    );
    let demo = [7, 3, 0, 9, 5];
    println!(
        "input: {demo:?} -> output: {:?}",
        reverse_digits(&trainer.model, &demo)
    );
    // ANCHOR_END: main_loop

    let bytes = checkpoint_bytes(&trainer.vs, &trainer.model.config)?;
    let saved = (&history, log.seconds.as_slice(), others);
    save_outputs(&args, trainer, saved, reserved, &bytes)
        .map_err(|e| rescued(&args.out, &bytes, e))?;
    interrupt::mark_saved();
    println!("checkpoint saved to {}", args.out.display());
    for path in plots.into_iter().flatten() {
        println!("figure written to {}", path.display());
    }
    // A signal after the last epoch interrupted nothing.
    anyhow::ensure!(
        !interrupt::interrupted() || history.epochs.len() == opts.epochs,
        "training was interrupted after {} of {} epochs; the model trained so \
         far is saved",
        history.epochs.len(),
        opts.epochs
    );
    Ok(())
}

/// Every file this run writes, by the name its messages give it.
fn output_names<'a>(
    args: &'a Args,
    history_file: &'a Path,
) -> Vec<(&'static str, &'a Path)> {
    let optional = [
        ("--plot", &args.plot),
        ("--loss-plot", &args.loss_plot),
        ("--schedule-plot", &args.schedule_plot),
    ];
    let mut all = vec![
        ("--out", args.out.as_path()),
        ("the history file", history_file),
    ];
    for (name, path) in optional {
        if let Some(path) = path {
            all.push((name, path.as_path()));
        }
    }
    all
}

/// The space set aside for each output, in the order of `output_names`.
struct Reservations {
    checkpoint: Reserved,
    history: Reserved,
    plots: [Option<Reserved>; 3],
}

/// Reserves the checkpoint's exact size and, for the history and the figures,
/// an estimate from above: a few dozen bytes per epoch and per step, and each
/// figure drawn now with stand-in values of its real length, plus half.
fn reserve_outputs(
    args: &Args,
    config: &TransformerConfig,
    opts: &TrainOptions,
    others: &[RunHistory],
) -> anyhow::Result<Reservations> {
    let steps = opts.epochs * opts.n_train.div_ceil(opts.batch_size);
    let history = 1024 + 96 * opts.epochs + 24 * steps;
    // Values that wander as real curves do, so that a PNG compresses no better.
    let wander = |i: usize| 0.5 + 0.45 * ((i * 7919 % 1000) as f64 / 1000.0);
    let this = RunHistory {
        label: args.init.name().to_string(),
        exact_match: (0..opts.epochs).map(wander).collect(),
        step_losses: (0..steps).map(wander).collect(),
    };
    let runs: Vec<RunHistory> = std::iter::once(this)
        .chain(others.iter().cloned())
        .collect();
    let drawn = |path: &Path, which: usize| -> anyhow::Result<u64> {
        let format = Format::of(path)?;
        let chart = match which {
            0 => {
                let series: Vec<_> = runs
                    .iter()
                    .map(|r| (r.label.clone(), r.exact_match.clone()))
                    .collect();
                exact_match_plot(format, &series)?
            }
            1 => loss_chart(format, &runs)?,
            _ => schedule_chart(format, steps.max(1), &|s| wander(s) * 1e-3)?,
        };
        Ok(chart.len() as u64 * 3 / 2 + (16 << 10))
    };
    let plots = [&args.plot, &args.loss_plot, &args.schedule_plot];
    let mut reserved_plots = [None, None, None];
    for (which, (path, slot)) in
        plots.iter().zip(&mut reserved_plots).enumerate()
    {
        if let Some(path) = path {
            *slot = Some(reserve(path, drawn(path, which)?)?);
        }
    }
    Ok(Reservations {
        checkpoint: reserve(&args.out, checkpoint_size(config)?)?,
        history: reserve(&history_path(&args.out), history as u64)?,
        plots: reserved_plots,
    })
}

/// The checkpoint, its history and the plots, each into its reserved space,
/// installed together or not at all.
fn save_outputs(
    args: &Args,
    trainer: &Trainer,
    (history, seconds, others): (&History, &[f64], Vec<RunHistory>),
    reserved: Reservations,
    checkpoint: &[u8],
) -> anyhow::Result<()> {
    let mut files = Batch::default();
    files.stage_reserved(reserved.checkpoint, checkpoint)?;
    let label = args.init.name();
    let tsv = history_tsv(label, history, seconds);
    files.stage_reserved(reserved.history, tsv.as_bytes())?;
    let [plot, loss_plot, schedule_plot] = reserved.plots;
    let this = RunHistory {
        label: label.to_string(),
        exact_match: history.epochs.iter().map(|r| r.val_exact_match).collect(),
        step_losses: history.step_losses.clone(),
    };
    let runs: Vec<RunHistory> = std::iter::once(this).chain(others).collect();
    if let (Some(path), Some(space)) = (&args.plot, plot) {
        let series: Vec<_> = runs
            .iter()
            .map(|r| (r.label.clone(), r.exact_match.clone()))
            .collect();
        let chart = exact_match_plot(Format::of(path)?, &series)?;
        files.stage_reserved(space, &chart)?;
    }
    if let (Some(path), Some(space)) = (&args.loss_plot, loss_plot) {
        files.stage_reserved(space, &loss_chart(Format::of(path)?, &runs)?)?;
    }
    if let (Some(path), Some(space)) = (&args.schedule_plot, schedule_plot) {
        let steps = trainer.step.max(1);
        let chart =
            schedule_chart(Format::of(path)?, steps, &|s| trainer.lr_at(s))?;
        files.stage_reserved(space, &chart)?;
    }
    files.commit()
}

/// The training loss of every step, one line per run.
fn loss_chart(format: Format, runs: &[RunHistory]) -> anyhow::Result<Vec<u8>> {
    let series = runs
        .iter()
        .filter(|r| !r.step_losses.is_empty())
        .map(|r| {
            let pts = r.step_losses.iter().enumerate();
            (
                r.label.clone(),
                pts.map(|(i, &l)| ((i + 1) as f64, l)).collect(),
            )
        })
        .collect();
    let chart = LineChart {
        title: "Training loss per step",
        x_desc: "step",
        y_desc: "cross-entropy (log scale)",
        series,
        log_y: true,
        dots: false,
        mark: None,
    };
    line_chart(format, &chart)
}

/// The learning rate of steps 1..=steps, with the warmup peak marked.
fn schedule_chart(
    format: Format,
    steps: usize,
    lr: &dyn Fn(usize) -> f64,
) -> anyhow::Result<Vec<u8>> {
    let pts: Vec<(f64, f64)> = (1..=steps).map(|s| (s as f64, lr(s))).collect();
    let (peak_step, peak) = pts
        .iter()
        .copied()
        .fold((0.0, f64::MIN), |a, p| if p.1 > a.1 { p } else { a });
    let chart = LineChart {
        title: "Learning rate per step: linear warmup, then 1/√step",
        x_desc: "step",
        y_desc: "learning rate",
        series: vec![("noam_lr(step, 128, 1000)".to_string(), pts)],
        log_y: false,
        dots: false,
        mark: Some((
            peak_step,
            peak,
            format!("  peak {peak:.2e} at step {peak_step}"),
        )),
    };
    line_chart(format, &chart)
}
