//! Chapter 10: greedy decoding with the trained checkpoint.
//! cargo run --release --bin 10_greedy_decode -- 7 3 0 9 5
//! cargo run --release --bin 10_greedy_decode     (demos and error analysis)
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use transformer_course::checkpoint::{
    ensure_reverse_task, load_checkpoint, DEFAULT_CHECKPOINT,
};
use transformer_course::cli::{
    run_main, select_device, train_first, DeviceChoice,
};
use transformer_course::data::{
    digit_rows, digit_sequences, make_dataset, make_dataset_excluding,
    parse_digits, row, source_tensor, ReverseDataset,
};
use transformer_course::generate::{
    correct_rows, greedy_decode, reverse_digits,
};
use transformer_course::output::check_writable;
use transformer_course::plot::{line_chart, save, LineChart};
use transformer_course::transformer::Transformer;
use transformer_course::vocab::{
    digits_of, tokens_to_words, MAX_LEN, MIN_LEN, PAD_ID, SEQ_LEN,
};

/// Reverse digits with the trained Transformer, one token at a time.
#[derive(Parser)]
struct Args {
    /// Digits to reverse (3 to 12 of them, the lengths the model was trained on),
    /// e.g. `7 3 0 9 5` or `73095`. Without any, runs a few demos and the
    /// validation exact match.
    digits: Vec<String>,
    /// Accept 1 or 2 digits too: the model never saw such inputs, and the output
    /// is marked as outside the training range.
    #[arg(long)]
    any_length: bool,
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    checkpoint: PathBuf,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// Print the decoder's input at every step.
    #[arg(long)]
    trace: bool,
    /// Where the figure of exact match by length goes (demo mode only).
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
}

const FIGURE: &str = "10_exact_match_by_length.svg";

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    // Check the input before touching the checkpoint: a typo deserves the
    // typo's message.
    let digits = if args.digits.is_empty() {
        None
    } else {
        Some(parse_digits(&args.digits)?)
    };
    let outside = digits.as_ref().is_some_and(|d| d.len() < MIN_LEN);
    if outside && !args.any_length {
        anyhow::bail!(
            "{} digit(s) is fewer than the model ever saw: it was trained on {MIN_LEN} to \
             {MAX_LEN} digits (pass --any-length to see what it does anyway)",
            digits.as_ref().map_or(0, Vec::len)
        );
    }
    if digits.is_none() {
        check_writable(&args.out_dir.join(FIGURE))?;
    }
    let device = select_device(args.device)?;
    let (_vs, model) =
        load_checkpoint(&args.checkpoint, device).map_err(train_first)?;
    ensure_reverse_task(&model, &args.checkpoint)?;

    if let Some(digits) = digits {
        let src = source_tensor(&digits, device);
        let out = greedy_decode(&model, &src, SEQ_LEN);
        if args.trace {
            // ANCHOR: trace
            // The decode loop replayed: each step fed everything produced so far.
            let tokens = row(&out, 0);
            for t in 1..tokens.len() {
                let fed = tokens_to_words(&tokens[..t]);
                let next = tokens_to_words(&tokens[t..t + 1]);
                println!("step {t:2}: decoder input {fed:<40} -> next {next}");
            }
            // ANCHOR_END: trace
        }
        let note = if outside {
            format!("  (outside the training range of {MIN_LEN} to {MAX_LEN} digits: not to be trusted)")
        } else {
            String::new()
        };
        println!(
            "input: {digits:?} -> output: {:?}{note}",
            digits_of(&row(&out, 0))
        );
        return Ok(());
    }

    // ANCHOR: demos
    let demos: [&[i64]; 5] = [
        &[7, 3, 0, 9, 5],
        &[1, 2, 3],
        &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2],
        &[4, 4, 4, 4, 0, 4],
        &[5, 0, 5],
    ];
    // All demos in one batch: rows finish at different steps and are padded
    // after EOS.
    let rows: Vec<_> = demos.iter().map(|d| source_tensor(d, device)).collect();
    let out = greedy_decode(&model, &tch::Tensor::cat(&rows, 0), SEQ_LEN);
    println!(
        "batched greedy decoding of {} inputs, {} decoder steps:",
        demos.len(),
        out.size()[1] - 1
    );
    for (i, d) in demos.iter().enumerate() {
        let tokens = row(&out, i as i64);
        let ok =
            digits_of(&tokens) == d.iter().rev().copied().collect::<Vec<_>>();
        let verdict = if ok { "ok" } else { "WRONG" };
        let input: Vec<String> = d.iter().map(|x| x.to_string()).collect();
        // The row without its trailing PADs, and how many there were.
        let end = tokens.iter().rposition(|&t| t != PAD_ID).unwrap_or(0) + 1;
        let pads = tokens.len() - end;
        let shown = tokens_to_words(&tokens[..end]);
        let pads = if pads > 0 {
            format!(" +{pads} <pad>")
        } else {
            String::new()
        };
        println!("  {:<23} -> {shown}{pads}  {verdict}", input.join(" "));
    }
    // ANCHOR_END: demos

    analyse(&model, &args.out_dir)
}

// ANCHOR: scored
/// One validation set: its digit sequences and which rows the model gets right.
struct Scored {
    seqs: Vec<Vec<i64>>,
    right: Vec<bool>,
}

impl Scored {
    fn new(model: &Transformer, data: &ReverseDataset) -> Scored {
        let seqs = digit_rows(data);
        let right = correct_rows(model, &data.src, &data.tgt, 500);
        Scored { seqs, right }
    }

    /// Exact match over the rows with `keep(sequence)`, and their count.
    fn exact_match(&self, keep: impl Fn(&[i64]) -> bool) -> (f64, usize) {
        let rows = self.seqs.iter().zip(&self.right).filter(|(s, _)| keep(s));
        let (n, ok) =
            rows.fold((0, 0), |(n, ok), (_, &r)| (n + 1, ok + r as usize));
        let rate = if n == 0 {
            f64::NAN
        } else {
            ok as f64 / n as f64
        };
        (rate, n)
    }
}
// ANCHOR_END: scored

/// How good is the model, and where does it fail? Exact match on the usual
/// validation set and on one disjoint from the training set, by input length,
/// the failures, and inputs shorter than any it was trained on.
fn analyse(model: &Transformer, out_dir: &Path) -> anyhow::Result<()> {
    // ANCHOR: overlap
    // The data of 09_train_reverse --data-seed 0: training seed 0, validation 1.
    let seen = digit_sequences(&make_dataset(20_000, 0));
    let val = make_dataset(1000, 1);
    let unseen = make_dataset_excluding(1000, 1, &seen); // none seen in training
                                                         // ANCHOR_END: overlap
    let t = Instant::now();
    let val = Scored::new(model, &val);
    let secs = t.elapsed().as_secs_f64();
    let overlap = val.seqs.iter().filter(|s| seen.contains(*s)).count();
    let (em, _) = val.exact_match(|_| true);
    println!("\nvalidation set (1000 samples, seed 1): exact match {em:.3}  ({secs:.2}s)");
    println!(
        "  {overlap} of its 1000 sequences also occur in the training set"
    );
    let scored_unseen = Scored::new(model, &unseen);
    let (em, _) = scored_unseen.exact_match(|_| true);
    println!("1000 sequences never seen in training:  exact match {em:.3}");
    let series = by_length(&val, &scored_unseen, &seen);
    failures(model, &unseen, &scored_unseen);
    outside_the_training_range(model);

    let path = out_dir.join(FIGURE);
    let chart = LineChart {
        title: "Exact match by input length",
        x_desc: "input length (digits)",
        y_desc: "exact match",
        series: vec![
            ("validation set (seed 1)".into(), series[0].clone()),
            ("never seen in training".into(), series[1].clone()),
        ],
        log_y: false,
        dots: true,
        mark: None,
    };
    save(&path, |format| line_chart(format, &chart))?;
    println!("\nwrote {}", path.display());
    Ok(())
}

// ANCHOR: by_length
/// Exact match for each input length, on both sets; returns the two curves.
fn by_length(
    val: &Scored,
    unseen: &Scored,
    seen: &HashSet<Vec<i64>>,
) -> [Vec<(f64, f64)>; 2] {
    println!("\nexact match by input length");
    println!("length   validation (n, in training)   never seen (n)");
    let mut curves = [Vec::new(), Vec::new()];
    for len in MIN_LEN..=MAX_LEN {
        let (a, n) = val.exact_match(|s| s.len() == len);
        let (b, m) = unseen.exact_match(|s| s.len() == len);
        let of_len = val.seqs.iter().filter(|s| s.len() == len);
        let in_training = of_len.filter(|s| seen.contains(*s)).count();
        let (n, k) = (format!("({n:3},"), format!("{in_training:3})"));
        println!("{len:6}   {a:5.3} {n} {k}            {b:5.3} ({m:3})");
        curves[0].push((len as f64, a));
        if m > 0 {
            curves[1].push((len as f64, b));
        }
    }
    curves
}
// ANCHOR_END: by_length

// ANCHOR: failures
/// The first dozen failures on the unseen set, and where each goes wrong.
fn failures(model: &Transformer, unseen: &ReverseDataset, scored: &Scored) {
    let failed: Vec<usize> = (0..scored.right.len())
        .filter(|&i| !scored.right[i])
        .collect();
    println!(
        "\nthe {} failures on the never-seen set, first 12:",
        failed.len()
    );
    println!("  (input -> output ≠ wanted, at the first wrong position)");
    let pred =
        greedy_decode(model, &unseen.src.to_device(model.device()), SEQ_LEN);
    let join = |d: &[i64]| d.iter().map(|x| x.to_string()).collect::<String>();
    for &i in failed.iter().take(12) {
        let input = &scored.seqs[i];
        let want: Vec<i64> = input.iter().rev().copied().collect();
        let got = digits_of(&row(&pred, i as i64));
        let first = (0..want.len()).find(|&p| want.get(p) != got.get(p));
        let lengths = if got.len() == want.len() {
            String::new()
        } else {
            format!(" ({} of {} digits)", got.len(), want.len())
        };
        let at = first.unwrap_or(want.len());
        println!(
            "  {:>12} -> {:>12} ≠ {:>12}  at {at}{lengths}",
            join(input),
            join(&got),
            join(&want),
        );
    }
}
// ANCHOR_END: failures

// ANCHOR: outside
/// Inputs of 1 and 2 digits: the model never saw any.
fn outside_the_training_range(model: &Transformer) {
    println!(
        "\noutside the training range (the model saw only 3 to 12 digits):"
    );
    for digits in [&[5][..], &[0], &[4, 2], &[7, 7], &[1, 9]] {
        let got = reverse_digits(model, digits);
        let want: Vec<i64> = digits.iter().rev().copied().collect();
        let verdict = if got == want { "right" } else { "wrong" };
        println!("  {digits:?} -> {got:?}  ({verdict})");
    }
}
// ANCHOR_END: outside
