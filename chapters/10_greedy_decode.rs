//! Chapter 10: greedy decoding with the trained checkpoint.
//! cargo run --release --bin 10_greedy_decode -- 7 3 0 9 5
//! cargo run --release --bin 10_greedy_decode     (demos and error analysis)
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use transformer_course::data::{
    digit_rows, digit_sequences, parse_digits, row, source_tensor,
    ReverseDataset,
};
use transformer_course::generate::{
    correct_rows, greedy_decode, reverse_digits, same_rate_p_value,
    two_rates_p_value, wilson_interval,
};
use transformer_course::train::{
    reverse_data, test_data, TrainOptions, TEST_SAMPLES,
};
use transformer_course::transformer::Transformer;
use transformer_course::vocab::{
    digits_of, tokens_to_words, MAX_LEN, MIN_LEN, PAD_ID, SEQ_LEN,
};
use workbench::checkpoint::{
    ensure_reverse_task, load_checkpoint, DEFAULT_CHECKPOINT,
};
use workbench::cli::{run_main, select_device, train_first, DeviceChoice};
use workbench::output::check_outputs_and_inputs;
use workbench::plot::{rate_chart, save, RateChart, RatePoint};

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
/// Random scatterings in the test of one rate for every length.
const DRAWS: usize = 100_000;

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

// ANCHOR: trace
/// The decode loop replayed for row 0 of `out`: each step was fed everything
/// produced before it.
fn trace(out: &tch::Tensor) {
    let tokens = row(out, 0);
    for t in 1..tokens.len() {
        let fed = tokens_to_words(&tokens[..t]);
        let next = tokens_to_words(&tokens[t..t + 1]);
        println!("step {t:2}: decoder input {fed:<40} -> next {next}");
    }
}
// ANCHOR_END: trace

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
        let figure = args.out_dir.join(FIGURE);
        check_outputs_and_inputs(
            &[("the figure", &figure)],
            &[("--checkpoint", &args.checkpoint)],
        )?;
    }
    let device = select_device(args.device)?;
    let (_vs, model) =
        load_checkpoint(&args.checkpoint, device).map_err(train_first)?;
    ensure_reverse_task(&model, &args.checkpoint)?;

    if let Some(digits) = digits {
        let src = source_tensor(&digits, device);
        let out = greedy_decode(&model, &src, SEQ_LEN);
        if args.trace {
            trace(&out);
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
/// One evaluation set: its digit sequences and which rows the model gets right.
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

    /// Right answers among the rows with `keep(sequence)`, and the rows.
    fn tally(&self, keep: impl Fn(&[i64]) -> bool) -> (usize, usize) {
        let rows = self.seqs.iter().zip(&self.right).filter(|(s, _)| keep(s));
        rows.fold((0, 0), |(k, n), (_, &r)| (k + r as usize, n + 1))
    }
}

/// "0.987 [0.978, 0.992]": the rate of k in n and its 95 % interval.
fn rate(k: usize, n: usize) -> String {
    let (lo, hi) = wilson_interval(k, n);
    format!("{:.3} [{lo:.3}, {hi:.3}]", k as f64 / n.max(1) as f64)
}

/// One dot of the figure: the rate of k in n at x, its interval and n.
fn point(x: usize, k: usize, n: usize) -> RatePoint {
    let rate = k as f64 / n as f64;
    let interval = wilson_interval(k, n);
    RatePoint {
        x: x as f64,
        rate,
        interval,
        n,
    }
}
// ANCHOR_END: scored

/// How good is the model, and where does it fail? Exact match on the usual
/// validation set and on a test set disjoint from training, by input length,
/// the failures, and inputs shorter than any it was trained on.
fn analyse(model: &Transformer, out_dir: &Path) -> anyhow::Result<()> {
    // ANCHOR: overlap
    // Chapter 09's recipe: training set from seed 0, validation from seed 1,
    // and a test set from seed 2 that skips every sequence of the other two.
    let opts = TrainOptions::default();
    let (train, val) = reverse_data(&opts);
    let test = test_data(&opts, &train, &val, TEST_SAMPLES);
    let seen = digit_sequences(&train);
    // ANCHOR_END: overlap
    let t = Instant::now();
    let val = Scored::new(model, &val);
    let secs = t.elapsed().as_secs_f64();
    let scored_test = Scored::new(model, &test);
    let overlap = val.seqs.iter().filter(|s| seen.contains(*s)).count();
    let (k, n) = val.tally(|_| true);
    println!("\nexact match, with its 95 % interval:");
    println!(
        "  validation set ({n} samples, seed 1)  {}  ({secs:.2}s)",
        rate(k, n)
    );
    println!(
        "    {overlap} of its {n} sequences also occur in the training set"
    );
    let (k, n) = scored_test.tally(|_| true);
    println!("  test set ({n} samples, seed 2)      {}", rate(k, n));
    println!("    none of its sequences occurs in training or validation");
    let series = by_length(&val, &scored_test, &seen);
    one_rate_for_every_length(&scored_test);
    two_rates_at_a_time(&val, &scored_test);
    failures(model, &test, &scored_test);
    outside_the_training_range(model);

    let path = out_dir.join(FIGURE);
    let chart = RateChart {
        title: "Exact match by input length, with 95 % intervals and n",
        x_desc: "input length (digits)",
        y_desc: "exact match",
        series: vec![
            ("test set (seed 2, never seen)".into(), series[0].clone()),
            ("validation set (seed 1)".into(), series[1].clone()),
        ],
    };
    save(&path, |format| rate_chart(format, &chart))?;
    println!("\nwrote {}", path.display());
    Ok(())
}

// ANCHOR: by_length
/// Exact match for each input length on both sets, with n and the 95 %
/// interval; returns the two series for the figure.
fn by_length(
    val: &Scored,
    test: &Scored,
    seen: &HashSet<Vec<i64>>,
) -> [Vec<RatePoint>; 2] {
    println!("\nexact match by input length, 95 % intervals");
    println!("        test set                      validation set");
    println!(
        "length     n  exact match [interval]     n  in training  exact match"
    );
    let mut series = [Vec::new(), Vec::new()];
    for len in MIN_LEN..=MAX_LEN {
        let of_len = |s: &[i64]| s.len() == len;
        let (k, n) = test.tally(of_len);
        let (kv, nv) = val.tally(of_len);
        let in_training = val
            .seqs
            .iter()
            .filter(|s| of_len(s) && seen.contains(*s))
            .count();
        let v = kv as f64 / nv as f64;
        println!(
            "{len:6} {n:5}  {}  {nv:4}  {in_training:11}  {v:11.3}",
            rate(k, n)
        );
        series[0].push(point(len, k, n));
        series[1].push(point(len, kv, nv));
    }
    series
}
// ANCHOR_END: by_length

/// A p-value with `decimals` places, or as a power of ten below 0.001: the
/// smallest p the draws can give, 1/100001, must not print as 0.
fn p_text(p: f64, decimals: usize) -> String {
    if p >= 1e-3 {
        format!("{p:.decimals$}")
    } else {
        format!("{p:.1e}")
    }
}

// ANCHOR: one_rate
/// Could every length share one miss rate? A question that treats all
/// lengths alike, so it cannot be aimed at where the misses fell: the test
/// set's misses by length, and the chance that random misses fall as
/// unevenly.
fn one_rate_for_every_length(test: &Scored) {
    let groups: Vec<(usize, usize)> = (MIN_LEN..=MAX_LEN)
        .map(|len| {
            let (right, n) = test.tally(|s| s.len() == len);
            (n - right, n)
        })
        .collect();
    let misses: usize = groups.iter().map(|g| g.0).sum();
    let p = same_rate_p_value(&groups, DRAWS, 0);
    println!(
        "one miss rate for every length? {misses} misses scattered at \
         random over the test rows\n  {DRAWS} times: p = {}, the share \
         of scatterings as uneven as the real one",
        p_text(p, 4)
    );
}
// ANCHOR_END: one_rate

// ANCHOR: two_rates
/// Two rates compared directly, not by their intervals: the test set against
/// the validation set, and the pair of lengths whose rates differ most (the
/// smallest p). That pair was picked out of 45 after looking, so its p is also
/// shown multiplied by 45 (Bonferroni's correction): the chance that some pair
/// of 45 looks this different when no length differs is up to 45 times the
/// chance for one pair.
fn two_rates_at_a_time(val: &Scored, test: &Scored) {
    let misses = |s: &Scored, keep: &dyn Fn(&[i64]) -> bool| {
        let (right, n) = s.tally(keep);
        (n - right, n)
    };
    let (v, t) = (misses(val, &|_| true), misses(test, &|_| true));
    println!("\ntwo rates at a time (Fisher's exact test, two-sided):");
    println!(
        "  test set against validation set: {} of {} missed against {} of \
         {},\n    p = {}",
        t.0,
        t.1,
        v.0,
        v.1,
        p_text(two_rates_p_value(t, v), 3)
    );
    let by_len: Vec<(usize, (usize, usize))> = (MIN_LEN..=MAX_LEN)
        .map(|len| (len, misses(test, &|s| s.len() == len)))
        .collect();
    let mut pairs = Vec::new();
    for (i, &(la, a)) in by_len.iter().enumerate() {
        for &(lb, b) in &by_len[i + 1..] {
            pairs.push((two_rates_p_value(a, b), la, a, lb, b));
        }
    }
    let (p, la, a, lb, b) = pairs
        .iter()
        .copied()
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .expect("ten lengths make pairs");
    let m = pairs.len();
    println!(
        "  the pair of lengths that differ most: {la} digits, {} of {} missed, \
         against\n    {lb} digits, {} of {}: p = {}; one pair of {m}, so \
         p × {m} = {}",
        a.0,
        a.1,
        b.0,
        b.1,
        p_text(p, 4),
        p_text((p * m as f64).min(1.0), 3)
    );
}
// ANCHOR_END: two_rates

// ANCHOR: failures
/// The first dozen failures on the test set, where each goes wrong, and how
/// many go wrong at a digit that repeats.
fn failures(model: &Transformer, test: &ReverseDataset, scored: &Scored) {
    let failed: Vec<usize> = (0..scored.right.len())
        .filter(|&i| !scored.right[i])
        .collect();
    let n = failed.len();
    let some = if n > 12 { ", the first 12" } else { "" };
    println!("\nthe {n} failures on the test set{some}:");
    println!("  (input -> output ≠ wanted, at the first wrong position)");
    let pred =
        greedy_decode(model, &test.src.to_device(model.device()), SEQ_LEN);
    let join = |d: &[i64]| d.iter().map(|x| x.to_string()).collect::<String>();
    let mut at_a_run = 0;
    for (shown, &i) in failed.iter().enumerate() {
        let input = &scored.seqs[i];
        let want: Vec<i64> = input.iter().rev().copied().collect();
        let got = digits_of(&row(&pred, i as i64));
        let first = (0..want.len()).find(|&p| want.get(p) != got.get(p));
        let at = first.unwrap_or(want.len());
        at_a_run += inside_a_run(&want, at) as usize;
        if shown >= 12 {
            continue;
        }
        let lengths = if got.len() == want.len() {
            String::new()
        } else {
            format!(" ({} of {} digits)", got.len(), want.len())
        };
        println!(
            "  {:>12} -> {:>12} ≠ {:>12}  at {at}{lengths}",
            join(input),
            join(&got),
            join(&want),
        );
    }
    let runs = with_a_run(&scored.seqs);
    println!(
        "  {at_a_run} of the {} go wrong inside a run of one repeated digit; \
         {runs} of the\n  {} test inputs ({:.0} %) have such a run",
        failed.len(),
        scored.seqs.len(),
        100.0 * runs as f64 / scored.seqs.len() as f64
    );
}
// ANCHOR_END: failures

// ANCHOR: runs
/// Whether output position `at` of `want` holds a digit of a run of one
/// repeated digit, like a 9 of 999.
fn inside_a_run(want: &[i64], at: usize) -> bool {
    let repeats = |p: usize| p > 0 && p < want.len() && want[p - 1] == want[p];
    repeats(at) || repeats(at + 1)
}

/// How many of `seqs` hold such a run anywhere.
fn with_a_run(seqs: &[Vec<i64>]) -> usize {
    seqs.iter()
        .filter(|s| s.windows(2).any(|w| w[0] == w[1]))
        .count()
}
// ANCHOR_END: runs

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
