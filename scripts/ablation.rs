//! What each piece buys: trains the course's Transformer with one piece taken
//! out or changed at a time (workbench/src/ablation.rs), several seeds each,
//! and scores every run on chapter 10's test set. Not a chapter; the book's
//! page "What each piece buys" shows its output.
//! cargo run --release --bin ablation -- --out-dir book/src/figures
//! cargo run --release --bin ablation -- --quick        (one seed, a few steps)
//!
//! Each run is a process of its own (this program, called with --worker), on
//! one thread: runs do not share libtorch's global random generator, and their
//! numbers do not depend on how many run at once (--jobs).
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use serde_json::{json, Value};
use tch::{Device, Tensor};
use transformer_course::data::{encode_pair, row, source_tensor};
use transformer_course::generate::{
    holm_passes, mean_interval_95, sign_flip_p_value, sign_test_p_value,
    wilson_interval,
};
use transformer_course::train::{teacher_forcing, TrainOptions};
use transformer_course::vocab::{digits_of, tokens_to_words};
use workbench::ablation::{
    run_variant, study_data, variant_named, Ablated, Budget, Run, Variant,
    STUDY_EPOCHS, VARIANTS,
};
use workbench::cli::{in_range, run_main, select_device, DeviceChoice};
use workbench::output::{check_outputs, Batch};
use workbench::plot::{heatmaps, line_chart, Figure, Format, LineChart, Panel};

/// Train the course's model with one piece out at a time, and measure.
#[derive(Parser)]
struct Args {
    /// One seed, 20 steps and 100 test samples: checks the program end to end.
    #[arg(long)]
    quick: bool,
    /// Seeds per variant, counted from --first-seed (1 to 10).
    #[arg(long, default_value_t = 3, value_parser = in_range(1, 10))]
    seeds: u64,
    /// The first seed, so that a second study can run seeds no earlier study
    /// has seen (0 to 1000).
    #[arg(long, default_value_t = 0, value_parser = in_range(0, 1000))]
    first_seed: u64,
    /// Epochs over the 20,000 training samples, 312 steps each (1 to 10).
    #[arg(long, default_value_t = STUDY_EPOCHS as u64, value_parser = in_range(1, 10))]
    epochs: u64,
    /// Only this variant (repeatable; the course's model and the variant's
    /// reference always run too).
    #[arg(long, value_parser = parse_variant)]
    only: Vec<&'static Variant>,
    /// Where the figures go.
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
    /// Runs trained at once, each in its own process on one thread (1 to 16).
    #[arg(long, default_value_t = 2, value_parser = in_range(1, 16))]
    jobs: u64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    device: DeviceChoice,
    /// Internal: train one run, "VARIANT:SEED", and print it as JSON.
    #[arg(long, hide = true)]
    worker: Option<String>,
}

fn parse_variant(s: &str) -> Result<&'static Variant, String> {
    variant_named(s).ok_or_else(|| {
        let names: Vec<_> = VARIANTS.iter().map(|v| v.name).collect();
        format!("no variant '{s}'; the variants are {}", names.join(", "))
    })
}

const LOSS_FIGURE: &str = "ablation_loss.svg";
const ATTENTION_FIGURE: &str = "ablation_no_position_attention.svg";
/// The input the pictures decode: chapter 10's example.
const EXAMPLE: [i64; 5] = [7, 3, 0, 9, 5];
/// The runs whose trained model also gives a picture (seed 0 only).
const PICTURED: [&str; 3] = ["course", "no-position", "no-causal-mask"];

fn main() {
    let args = Args::parse();
    run_main(|| match args.worker.clone() {
        Some(job) => worker(&args, &job),
        None => study(args),
    })
}

fn budget(args: &Args) -> Budget {
    Budget::study(args.epochs as usize, args.quick)
}

/// One run, printed to stdout as one line of JSON for the study to read.
fn worker(args: &Args, job: &str) -> Result<()> {
    tch::set_num_threads(1);
    let (name, seed) = job.split_once(':').context("a job is VARIANT:SEED")?;
    let v = parse_variant(name).map_err(|e| anyhow!(e))?;
    let seed: u64 = seed.parse().context("a job's seed is a number")?;
    let device = select_device(args.device)?;
    let (opts, [train, val, test]) = study_data(args.quick);
    let opts = TrainOptions { seed, ..opts };
    let b = budget(args);
    let (run, trained) =
        run_variant(v, &opts, &b, (&train, &val, &test), device, |_, _| {})?;
    let pictured = seed == 0 && PICTURED.contains(&v.name);
    let model = &trained.trainer.model;
    let picture = if pictured {
        picture(v.name, model, device)?
    } else {
        Value::Null
    };
    let rows: String = run
        .test_rows
        .iter()
        .map(|&r| if r { '1' } else { '0' })
        .collect();
    let line = json!({
        "variant": v.name,
        "seed": seed,
        "steps": run.steps,
        "losses": run.losses,
        "checks": run.checks,
        "test": rows,
        "seconds": run.seconds,
        "picture": picture,
    });
    println!("{line}");
    Ok(())
}

/// Reads back a worker's line.
fn run_of(line: &str, target: f64) -> Result<(Run, Value)> {
    let v: Value = serde_json::from_str(line).context("a worker's output")?;
    let name = v["variant"].as_str().context("variant")?;
    let variant = variant_named(name).context("a known variant")?;
    let checks: Vec<(usize, f64)> =
        serde_json::from_value(v["checks"].clone())?;
    let run = Run {
        variant: variant.name,
        seed: v["seed"].as_u64().context("seed")?,
        steps: v["steps"].as_u64().context("steps")? as usize,
        losses: serde_json::from_value(v["losses"].clone())?,
        steps_to_target: checks.iter().find(|c| c.1 >= target).map(|c| c.0),
        checks,
        test_rows: v["test"]
            .as_str()
            .context("test")?
            .chars()
            .map(|c| c == '1')
            .collect(),
        seconds: v["seconds"].as_f64().context("seconds")?,
    };
    Ok((run, v["picture"].clone()))
}

/// Runs `jobs` through workers, `n` at once; returns their lines in job order.
fn run_workers(
    args: &Args,
    jobs: Vec<String>,
    n: usize,
) -> Result<Vec<String>> {
    let exe = std::env::current_exe()?;
    let mut common: Vec<String> =
        vec!["--epochs".into(), args.epochs.to_string()];
    if args.quick {
        common.push("--quick".into());
    }
    if args.device == DeviceChoice::Cuda {
        common.extend(["--device".into(), "cuda".into()]);
    }
    let total = jobs.len();
    let queue =
        Mutex::new(jobs.into_iter().enumerate().collect::<VecDeque<_>>());
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..n {
            let tx = tx.clone();
            let (queue, exe, common) = (&queue, &exe, &common);
            s.spawn(move || loop {
                let next = queue.lock().map(|mut q| q.pop_front());
                let Ok(Some((i, job))) = next else { break };
                let out = Command::new(exe)
                    .args(common)
                    .args(["--worker", &job])
                    .output();
                let _ = tx.send((i, job, out));
            });
        }
    });
    drop(tx);
    let mut lines = vec![String::new(); total];
    for (done, (i, job, out)) in rx.into_iter().enumerate() {
        let out = out.with_context(|| format!("cannot start the run {job}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!("the run {job} failed: {}", err.trim());
        }
        lines[i] = String::from_utf8(out.stdout)?.trim().to_string();
        eprintln!("[{}/{total}] {job} done", done + 1);
    }
    Ok(lines)
}

fn study(args: Args) -> Result<()> {
    select_device(args.device)?;
    let loss_path = args.out_dir.join(LOSS_FIGURE);
    let attention_path = args.out_dir.join(ATTENTION_FIGURE);
    check_outputs(&[
        ("the loss figure", &loss_path),
        ("the attention figure", &attention_path),
    ])?;
    let mut variants: Vec<&'static Variant> = vec![&VARIANTS[0]];
    if args.only.is_empty() {
        variants.extend(&VARIANTS[1..]);
    } else {
        // Each once, however often it was named: a variant twice would pair
        // every run twice in the test across seeds. A variant is measured against
        // its reference, which must run too.
        for v in args.only.iter() {
            let r = variant_named(v.reference()).expect("a known reference");
            for w in [*v, r] {
                if !variants.iter().any(|x| x.name == w.name) {
                    variants.push(w);
                }
            }
        }
    }
    let (opts, [train, _, test]) = study_data(args.quick);
    let seeds = if args.quick { 1 } else { args.seeds };
    let first = args.first_seed;
    let b = budget(&args);
    let steps = b.steps(train.len(), opts.batch_size);
    println!(
        "budget: {steps} steps of {} samples per run, chapter 09's schedule \
         (warmup {}),\n{seeds} seed(s) per variant{}, each run on one thread",
        opts.batch_size,
        opts.warmup,
        // Said only when the seeds do not start at 0, the studies before it.
        match (first, seeds) {
            (0, _) => String::new(),
            (_, 1) => format!(" (seed {first})"),
            _ => format!(" (seeds {first} to {})", first + seeds - 1),
        }
    );
    println!(
        "checks: validation exact match every {} steps on {} samples; \
         test: {} samples",
        b.check_every,
        b.check_samples,
        test.len()
    );
    println!();
    let started = Instant::now();
    let jobs: Vec<String> = variants
        .iter()
        .flat_map(|v| {
            (first..first + seeds).map(move |s| format!("{}:{s}", v.name))
        })
        .collect();
    let lines = run_workers(&args, jobs, args.jobs as usize)?;
    let mut runs = Vec::new();
    let mut pictures = Vec::new();
    for line in &lines {
        let (run, picture) = run_of(line, b.target)?;
        if !picture.is_null() {
            pictures.push((run.variant, picture));
        }
        runs.push(run);
    }
    // Apart from the progress lines: the book includes this table by a line range,
    // and its check wants a range to begin after a blank line.
    println!();
    println!(
        "{:<19} {:>4} {:>11} {:>15} {:>9} {:>6}",
        "variant", "seed", "test right", "95% interval", "to 0.9", "time"
    );
    runs.iter().for_each(print_run);
    println!();
    summary(&variants, &runs);
    println!();
    across_seeds(&variants, &runs, seeds);
    println!();
    let mut files = Batch::default();
    let curves = loss_curves(&variants, &runs);
    files.stage_bytes(&loss_path, &line_chart(Format::Svg, &curves)?)?;
    let mut panels = Vec::new();
    for (name, p) in &pictures {
        if let Some(text) = p["peek"].as_str() {
            println!("{text}");
        }
        if p["panel"].is_object()
            && (*name == "course" || *name == "no-position")
        {
            panels.push(panel_of(&p["panel"])?);
        }
    }
    if panels.len() == 2 {
        let fig = Figure::weights(
            "Cross-attention, last layer, mean of the heads",
            2,
            true,
            ("source token", "decoder input"),
        );
        let bytes = heatmaps(Format::Svg, &fig, &panels)?;
        files.stage_bytes(&attention_path, &bytes)?;
    }
    files.commit()?;
    println!("figure written to {}", loss_path.display());
    if panels.len() == 2 {
        println!("figure written to {}", attention_path.display());
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "wall time of the study: {:.0} min {:.0} s ({} runs, {} at once)",
        (secs / 60.0).floor(),
        secs % 60.0,
        runs.len(),
        args.jobs
    );
    Ok(())
}

/// What a pictured run shows: the peeking model's two decodes, or where a model
/// looks in the source.
fn picture(name: &str, model: &Ablated, device: Device) -> Result<Value> {
    Ok(match name {
        "no-causal-mask" => json!({ "peek": peeking(model, device) }),
        _ => json!({ "panel": attention_panel(name, model, device)? }),
    })
}

fn panel_of(v: &Value) -> Result<Panel> {
    Ok(Panel {
        title: v["title"].as_str().context("title")?.to_string(),
        matrix: serde_json::from_value(v["matrix"].clone())?,
        row_labels: serde_json::from_value(v["rows"].clone())?,
        col_labels: serde_json::from_value(v["cols"].clone())?,
    })
}

fn print_run(r: &Run) {
    let (lo, hi) = wilson_interval(r.right(), r.test_rows.len());
    let reached = r
        .steps_to_target
        .map_or("never".to_string(), |s| s.to_string());
    println!(
        "{:<19} {:>4} {:>5}/{:<5} [{:.3}, {:.3}] {:>9} {:>5.0}s",
        r.variant,
        r.seed,
        r.right(),
        r.test_rows.len(),
        lo,
        hi,
        reached,
        r.seconds
    );
}

/// Per variant: the test exact match of each seed, their range, the steps to
/// the target, and a direct test against the course's run of the same seed.
fn summary(variants: &[&'static Variant], runs: &[Run]) {
    let of = |name: &str| runs_of(runs, name);
    println!(
        "{:<19} {:<23} {:<16} {:<22}",
        "variant",
        "exact match by seed",
        "steps to 0.9",
        "vs reference, per seed"
    );
    for v in variants {
        let mine = of(v.name);
        let rates: Vec<String> =
            mine.iter().map(|r| format!("{:.3}", rate(r))).collect();
        let reached: Vec<String> = mine
            .iter()
            .map(|r| r.steps_to_target.map_or("-".into(), |s| s.to_string()))
            .collect();
        let versus = if v.name == "course" {
            "(the reference)".to_string()
        } else {
            compare(&of(v.reference()), &mine)
        };
        println!(
            "{:<19} {:<23} {:<16} {versus}",
            v.name,
            rates.join(" "),
            reached.join(" ")
        );
    }
    println!();
    println!(
        "steps to 0.9: the first check at or above it ('-': never). vs reference: for\n\
         each seed, the variant against its reference (the course's model; for\n\
         post-norm-no-warmup, post-norm) trained from the same seed on the same batches,\n\
         row by row on the same test samples (the exact sign test): '−' worse, '+' better\n\
         at p < 0.01, '~' neither; then the largest p of the seeds. Each says whether two\n\
         trained models differ on these rows, not whether the recipe does."
    );
}

/// The test across seeds: per variant, each seed's exact match minus its
/// reference's of the same seed; their mean with a 95% interval, the exact
/// sign-flip p, and Holm's correction over the variants of this run.
fn across_seeds(variants: &[&'static Variant], runs: &[Run], seeds: u64) {
    let of = |name: &str| runs_of(runs, name);
    let tested: Vec<(&Variant, Vec<f64>)> = variants
        .iter()
        .filter(|v| v.name != "course")
        .map(|v| {
            let reference = of(v.reference());
            let diffs = of(v.name)
                .iter()
                .filter_map(|r| {
                    let c = reference.iter().find(|c| c.seed == r.seed)?;
                    Some(rate(r) - rate(c))
                })
                .collect();
            (*v, diffs)
        })
        .collect();
    let ps: Vec<f64> = tested
        .iter()
        .map(|(_, d)| {
            if d.is_empty() {
                1.0
            } else {
                sign_flip_p_value(d)
            }
        })
        .collect();
    let passes = holm_passes(&ps, 0.01);
    println!(
        "across seeds: variant minus reference, seed for seed ({seeds} seed(s))"
    );
    println!(
        "{:<19} {:>9} {:>20} {:>8}  Holm, p < 0.01",
        "variant", "mean", "95% interval", "exact p"
    );
    for (((v, d), p), pass) in tested.iter().zip(&ps).zip(&passes) {
        let (mean, interval) = if d.len() >= 2 {
            let (m, lo, hi) = mean_interval_95(d);
            (m, format!("[{lo:+.3}, {hi:+.3}]"))
        } else {
            (d.first().copied().unwrap_or(0.0), "-".to_string())
        };
        let verdict = match (pass, mean > 0.0) {
            (true, true) => "shown: better",
            (true, false) => "shown: worse",
            (false, _) => "not shown",
        };
        println!(
            "{:<19} {mean:>+9.3} {interval:>20} {:>8}  {verdict}",
            v.name,
            p_text(*p)
        );
    }
    println!();
    println!(
        "exact p: the share of the 2^n ways to flip the seeds' signs whose mean is as far\n\
         from 0 (it cannot go below 2/2^n: 0.25 with 3 seeds, 0.0078 with 8, 0.002 with\n\
         10). Holm: the smallest p must be below 0.01/m for m variants tested, the next\n\
         below 0.01/(m - 1), and so on. The interval assumes bell-shaped seeds; 'not\n\
         shown' with a wide interval is not 'no effect'."
    );
}

/// The runs of the variant called `name`, in the order of the jobs.
fn runs_of<'a>(runs: &'a [Run], name: &str) -> Vec<&'a Run> {
    runs.iter().filter(|r| r.variant == name).collect()
}

fn rate(r: &Run) -> f64 {
    r.right() as f64 / r.test_rows.len() as f64
}

/// "− ×3, p ≤ 1e-12" or "+ − ~, p ≤ 0.02": each seed's sign test of the
/// variant's run against the course's run of the same seed, on the same test
/// rows; − worse, + better, ~ neither at p < 0.01; then the largest p.
fn compare(course: &[&Run], mine: &[&Run]) -> String {
    let mut verdicts = Vec::new();
    let mut largest_p: f64 = 0.0;
    for r in mine {
        let Some(c) = course.iter().find(|c| c.seed == r.seed) else {
            continue;
        };
        let pairs = c.test_rows.iter().zip(&r.test_rows);
        let lost = pairs.clone().filter(|(a, b)| **a && !**b).count();
        let gained = pairs.filter(|(a, b)| !**a && **b).count();
        let p = sign_test_p_value(lost, gained);
        largest_p = largest_p.max(p);
        verdicts.push(if p >= 0.01 {
            "~"
        } else if lost > gained {
            "−"
        } else {
            "+"
        });
    }
    let all_same = verdicts.windows(2).all(|w| w[0] == w[1]);
    let words = if all_same && verdicts.len() > 1 {
        format!("{} ×{}", verdicts[0], verdicts.len())
    } else {
        verdicts.join(" ")
    };
    format!("{words}, p ≤ {}", p_text(largest_p))
}

fn p_text(p: f64) -> String {
    if p < 1e-300 {
        "1e-300".into()
    } else if p < 0.001 {
        format!("{p:.0e}")
    } else {
        format!("{p:.3}")
    }
}

/// What the model trained without the causal mask does with chapter 10's
/// example: the answer read off while shown it (teacher forcing), and the
/// answer generated.
fn peeking(model: &Ablated, device: Device) -> String {
    let src = source_tensor(&EXAMPLE, device);
    let generated = row(&model.greedy(&src), 0);
    let (_, answer) = encode_pair(&EXAMPLE); // BOS 5 9 0 3 7 EOS PAD…
    let answer = Tensor::from_slice(&answer).unsqueeze(0).to_device(device);
    let (tgt_in, _) = teacher_forcing(&answer);
    let logits = tch::no_grad(|| model.forward(&src, &tgt_in, false));
    let predicted = row(&logits.argmax(-1, false), 0);
    format!(
        "the model trained without the causal mask, seed 0, on {EXAMPLE:?}:\n  \
         shown the answer (teacher forcing): {}\n  \
         generating (greedy): {} -> digits {:?}",
        tokens_to_words(&predicted[..6]),
        tokens_to_words(&generated),
        digits_of(&generated)
    )
}

/// The loss of every variant, the mean over its seeds, averaged over windows of
/// 26 steps (twelve windows an epoch).
fn loss_curves<'a>(
    variants: &[&'static Variant],
    runs: &[Run],
) -> LineChart<'a> {
    const WINDOW: usize = 26;
    let series = variants
        .iter()
        .map(|v| {
            let mine: Vec<&Run> =
                runs.iter().filter(|r| r.variant == v.name).collect();
            let steps = mine.iter().map(|r| r.losses.len()).min().unwrap_or(0);
            // A run shorter than a window (--quick) is one window.
            let window = WINDOW.min(steps).max(1);
            let points = (0..steps / window)
                .map(|w| {
                    let span = w * window..(w + 1) * window;
                    let sum: f64 = mine
                        .iter()
                        .flat_map(|r| r.losses[span.clone()].iter())
                        .sum();
                    let n = (mine.len() * window) as f64;
                    (((w + 1) * window) as f64, sum / n)
                })
                .collect();
            (v.name.to_string(), points)
        })
        .collect();
    LineChart {
        title: "Training loss, mean of the seeds",
        x_desc: "step",
        y_desc: "loss (log scale)",
        series,
        log_y: true,
        dots: false,
        mark: None,
    }
}

/// Chapter 10's example through `model`: where each decoder step looks in
/// the source, last layer, mean of the heads, as a panel for `heatmaps`.
fn attention_panel(
    name: &str,
    model: &Ablated,
    device: Device,
) -> Result<Value> {
    let src = source_tensor(&EXAMPLE, device);
    let generated = model.greedy(&src);
    let l = generated.size()[1];
    if l < 2 {
        bail!("the {name} model generated nothing");
    }
    let tgt_in = generated.narrow(1, 0, l - 1);
    let (_, weights) = tch::no_grad(|| {
        let (memory, mask) = model.encode(&src, false);
        model.decode_with_cross(&tgt_in, &memory, mask.as_ref(), false)
    });
    let last = weights.last().context("the decoder has layers")?;
    let mean = last.mean_dim(1, false, tch::Kind::Float).get(0); // [Lt, Ls]
    let matrix = (0..mean.size()[0])
        .map(|i| Ok(Vec::<f64>::try_from(&mean.get(i))?))
        .collect::<Result<Vec<_>>>()?;
    let words = |ids: &[i64]| -> Vec<String> {
        ids.iter().map(|&t| tokens_to_words(&[t])).collect()
    };
    Ok(json!({
        "title": format!("{name}: {:?}", digits_of(&row(&generated, 0))),
        "matrix": matrix,
        "rows": words(&row(&tgt_in, 0)),
        "cols": words(&row(&src, 0)),
    }))
}
