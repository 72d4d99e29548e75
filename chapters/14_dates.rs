//! Chapter 14: a second task in real words. French dates to ISO dates, with the
//! course's model and chapter 09's training loop, both unchanged.
//! cargo run --release --bin 14_dates
//! cargo run --release --bin 14_dates -- --seed 0 --out-dir out
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use transformer_course::dates::{
    field_attention, translate, wrong_fields, Date, DateTask, Field, Form,
    Part, Sample,
};
use transformer_course::generate::wilson_interval;
use transformer_course::layers::parameter_count;
use transformer_course::train::{fit, TrainOptions, Trainer};
use workbench::cli::{
    device_name, in_range, parse_threads, run_main, select_device, set_threads,
    thousands, DeviceChoice, EpochLog,
};
use workbench::output::check_outputs;
use workbench::plot::{date_cross_attention, save};

/// Train the course's Transformer to read French dates and write ISO dates.
#[derive(Parser)]
struct Args {
    /// Passes over the training samples (1 to 1000).
    #[arg(long, default_value_t = 5, value_parser = in_range(1, 1000))]
    epochs: u64,
    /// Training samples, drawn once (1 to 1,000,000).
    #[arg(long, default_value_t = 64_000, value_parser = in_range(1, 1_000_000))]
    train_samples: u64,
    /// Held-out samples scored at the end (1 to 100,000).
    #[arg(long, default_value_t = 5_000, value_parser = in_range(1, 100_000))]
    test_samples: u64,
    /// Seeds the weights, the dropout masks and the shuffling; the data and
    /// the split stay the same for every seed.
    #[arg(long, default_value_t = 2)]
    seed: u64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// CPU threads for libtorch (default: all cores).
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
    /// Where the cross-attention figure goes (14_dates_cross_attention.svg).
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
}

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let figure = args.out_dir.join("14_dates_cross_attention.svg");
    check_outputs(&[("the figure", figure.as_path())])?;
    set_threads(args.threads);
    let device = select_device(args.device)?;

    let task =
        DateTask::new(args.train_samples as usize, args.test_samples as usize);
    let split = &task.split;
    let count = |p| thousands(split.dates(p).len() as i64);
    println!(
        "dates 1900-2099: {} train, {} validation, {} test",
        count(Part::Train),
        count(Part::Val),
        count(Part::Test),
    );
    println!("held out of training, in every form (the test set's):");
    let years: Vec<String> =
        split.test_years.iter().map(u32::to_string).collect();
    let days: Vec<String> = split
        .test_days
        .iter()
        .map(|(m, d)| format!("{d:02}/{m:02}"))
        .collect();
    for (what, items, per_line) in [("years", years, 10), ("days", days, 12)] {
        for (i, line) in items.chunks(per_line).enumerate() {
            let head = if i == 0 { what } else { "" };
            println!("  {head:<6} {}", line.join(" "));
        }
    }

    println!("\none date, five forms (pieces; the field each piece writes):");
    let day = Date::new(2024, 3, 21).expect("a real date");
    for form in Form::ALL {
        let s = Sample::write(day, form);
        println!("  {:<15} {}", form.name(), s.text);
        println!("      {}", roles_line(&s));
    }

    let (src_vocab, test) = (&task.src_vocab, &task.test);
    let one = test
        .iter()
        .find(|s| s.form == Form::Words)
        .unwrap_or(&test[0]);
    let ids = src_vocab.encode(&one.text);
    println!(
        "\nvocabularies: {} source pieces, {} target pieces (4 special each)",
        src_vocab.len(),
        task.tgt_vocab.len()
    );
    println!("round trip: {:?}\n  -> {ids:?}", one.text);
    println!("  -> {:?}", src_vocab.decode(&ids));
    let unknown = "le trente-deux brumaire";
    println!(
        "a piece never seen: {unknown:?}\n  -> {:?}",
        src_vocab.encode(unknown)
    );

    // ANCHOR: train
    let opts = TrainOptions {
        epochs: args.epochs as usize,
        seed: args.seed,
        n_train: task.train.len(),
        ..TrainOptions::default()
    };
    let (train_data, val_data) =
        (task.tensors(&task.train)?, task.tensors(&task.val)?);
    let mut trainer = Trainer::new(task.config(), device, &opts)?;
    println!(
        "\ndevice={} threads={} parameters={} seed={}",
        device_name(device),
        tch::get_num_threads(),
        thousands(parameter_count(&trainer.vs)),
        args.seed
    );
    let start = Instant::now();
    let mut log = EpochLog::new();
    fit(&mut trainer, &train_data, &val_data, &opts, &mut log)?;
    println!(
        "{} steps of batch {} in {:.0}s",
        thousands(trainer.step as i64),
        opts.batch_size,
        start.elapsed().as_secs_f64()
    );
    // ANCHOR_END: train

    // ANCHOR: score
    let test_data = task.tensors(test)?;
    let model = &trainer.model;
    let predicted = translate(model, &test_data, &task.tgt_vocab, 500);
    let right: Vec<bool> = test
        .iter()
        .zip(&predicted)
        .map(|(s, p)| s.date.iso() == *p)
        .collect();
    let k = right.iter().filter(|&&r| r).count();
    let (lo, hi) = wilson_interval(k, test.len());
    println!(
        "\nheld-out exact match: {k} of {} = {:.4}  \
         (95% interval {lo:.3} to {hi:.3})",
        test.len(),
        k as f64 / test.len() as f64
    );
    println!("\nby form          right      n");
    for form in Form::ALL {
        let rows = (0..test.len()).filter(|&i| test[i].form == form);
        let (n, k) =
            rows.fold((0, 0), |(n, k), i| (n + 1, k + right[i] as usize));
        println!("  {:<15} {k:>5}  {n:>5}", form.name());
    }
    let wrong: Vec<usize> = (0..test.len()).filter(|&i| !right[i]).collect();
    for field in Field::ALL {
        let has = |&&i: &&usize| {
            wrong_fields(&test[i].date, &predicted[i]).contains(&field)
        };
        let n = wrong.iter().filter(has).count();
        println!("  misses with the {} wrong: {n}", field.name());
    }
    for &i in wrong.iter().take(5) {
        let s = &test[i];
        println!("  {:?}", s.text);
        println!("      -> {} (truth {})", predicted[i], s.date.iso());
    }
    // ANCHOR_END: score

    // ANCHOR: attention
    let probe = &test[..1000.min(test.len())];
    let probe_data = task.tensors(probe)?;
    let shares = field_attention(model, probe, &probe_data);
    println!(
        "\ncross-attention on the right words, mean share \
         ({} held-out samples):",
        probe.len()
    );
    println!("  layer head   year  month    day");
    for (l, heads) in shares.iter().enumerate() {
        for (h, s) in heads.iter().enumerate() {
            println!("  {l:>5} {h:>4}  {:.3}  {:.3}  {:.3}", s[0], s[1], s[2]);
        }
    }
    let chance: Vec<f64> = Field::ALL
        .map(|f| {
            let share = |s: &Sample| {
                s.span(f).len() as f64 / (s.pieces.len() + 1) as f64
            };
            probe.iter().map(share).sum::<f64>() / probe.len() as f64
        })
        .to_vec();
    println!(
        "  evenly spread  {:.3}  {:.3}  {:.3}",
        chance[0], chance[1], chance[2]
    );
    // ANCHOR_END: attention

    let data = task.tensors(std::slice::from_ref(one))?;
    save(&figure, |format| {
        date_cross_attention(format, model, one, &data)
    })?;
    println!("\nfigure written to {}", figure.display());
    println!("total {:.0}s", start.elapsed().as_secs_f64());
    Ok(())
}

/// The pieces of a sample, each with the first letter of its field.
fn roles_line(s: &Sample) -> String {
    let tag = |r: &Option<Field>| r.map_or("·", |f| &f.name()[..1]);
    s.pieces
        .iter()
        .zip(&s.roles)
        .map(|(p, r)| format!("{p}/{}", tag(r)))
        .collect::<Vec<_>>()
        .join(" ")
}
