//! Chapter 09: train the Transformer to reverse digit sequences.
//! cargo run --release --bin 09_train_reverse
//! cargo run --release --bin 09_train_reverse -- --init framework-default --out checkpoints/framework-default.safetensors
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use transformer_course::decode::{exact_match, reverse_digits};
use transformer_course::embedding::Init;
use transformer_course::train::{
    configure_precision, describe_run, set_threads, fit, reverse_config, reverse_data, save_checkpoint, select_device, DeviceChoice, EpochReport, TrainOptions, Trainer,
    DEFAULT_CHECKPOINT, DEFAULT_SEED,
};

#[derive(Parser)]
#[command(about = "Train the encoder-decoder Transformer on the sequence-reversal task")]
struct Args {
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    /// Seeds the weights, the dropout masks and the shuffling (scripts/seed-spread.sh
    /// shows how much the result depends on it; the default is the median of five).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Seeds the data: training set from this seed, validation set from seed + 1.
    #[arg(long, default_value_t = 0)]
    data_seed: u64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// Where the checkpoint goes (a .history.tsv with the epoch table goes beside it).
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    out: PathBuf,
    /// CPU threads for libtorch (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// paper = the course's init fixes; framework-default = PyTorch's defaults (the
    /// source chapter's slow first run); tch-default = tch's own defaults.
    #[arg(long, value_enum, default_value_t = Init::Paper)]
    init: Init,
    /// Other runs' .history.tsv files to draw beside this one in --plot.
    #[arg(long, num_args = 1..)]
    compare: Vec<PathBuf>,
    /// Draw validation exact match per epoch (this run and --compare runs) to this SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Benchmark mode: time this many training steps (after 5 untimed ones) and exit.
    #[arg(long)]
    bench_steps: Option<usize>,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    set_threads(args.threads)?;
    let device = select_device(args.device)?;
    let precision = configure_precision(device)?;
    let opts = TrainOptions { epochs: args.epochs, seed: args.seed, data_seed: args.data_seed, ..TrainOptions::default() };
    let (train, val) = reverse_data(&opts);
    let mut trainer = Trainer::new(reverse_config(args.init), device, opts.seed, opts.warmup, opts.label_smoothing)?;
    println!("{}", describe_run(&trainer, precision, &opts));

    if let Some(steps) = args.bench_steps {
        return bench(&mut trainer, &train, opts.batch_size, steps);
    }

    // ANCHOR: main_loop
    let history = fit(&mut trainer, &train, &val, &opts, |r: &EpochReport| println!("{r}"));
    let t = Instant::now();
    let em = exact_match(&trainer.model, &val.src, &val.tgt, 500);
    println!("validation exact match on all {} samples: {em:.3}  ({:.1}s)", val.len(), t.elapsed().as_secs_f64());
    let demo = [7, 3, 0, 9, 5];
    println!("input: {demo:?} -> output: {:?}", reverse_digits(&trainer.model, &demo));
    save_checkpoint(&trainer.vs, &trainer.model.config, &args.out)?;
    println!("checkpoint saved to {}", args.out.display());
    // ANCHOR_END: main_loop

    let history_path = args.out.with_extension("history.tsv");
    transformer_course::plot::write_history(&history_path, args.init.name(), &history)?;
    if let Some(plot) = &args.plot {
        let mut runs = vec![(args.init.name().to_string(), history.iter().map(|r| r.val_exact_match).collect())];
        for other in &args.compare {
            runs.push(transformer_course::plot::read_history(other)?);
        }
        transformer_course::plot::exact_match_plot(plot, &runs)?;
        println!("plot of validation exact match per epoch written to {}", plot.display());
    }
    Ok(())
}

/// Times `steps` optimizer steps on the recipe's batches, for scripts/bench-vs-pytorch.sh.
fn bench(trainer: &mut Trainer, train: &transformer_course::data::ReverseDataset, batch_size: usize, steps: usize) -> anyhow::Result<()> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut batches = Vec::new();
    while batches.len() < steps + 5 {
        batches.extend(transformer_course::data::epoch_batches(train.len(), batch_size, &mut rng));
    }
    let mut prof = transformer_course::train::StepProfile::default();
    let mut run = |idx: &tch::Tensor, prof: &mut transformer_course::train::StepProfile| {
        trainer.train_step_profiled(&train.src.index_select(0, idx), &train.tgt.index_select(0, idx), prof)
    };
    for idx in &batches[..5] {
        run(idx, &mut Default::default());
    }
    let t = Instant::now();
    for idx in &batches[5..steps + 5] {
        run(idx, &mut prof);
    }
    let secs = t.elapsed().as_secs_f64();
    println!("profile: {}", prof.summary(steps));
    let device = if trainer.device.is_cuda() { "cuda" } else { "cpu" };
    println!(
        "bench: impl=rust steps={steps} seconds={secs:.3} steps_per_s={:.2} threads={} device={device}",
        steps as f64 / secs,
        tch::get_num_threads()
    );
    Ok(())
}
