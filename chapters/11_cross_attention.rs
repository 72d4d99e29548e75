//! Chapter 11: does the trained model align backwards? Its cross-attention, as
//! numbers and as heatmaps.
//! cargo run --release --bin 11_cross_attention            (7 3 0 9 5 1 8)
//! cargo run --release --bin 11_cross_attention -- 1 2 3 4
use std::path::{Path, PathBuf};

use clap::Parser;
use transformer_course::config::Init;
use transformer_course::data::{digit_rows, parse_digits, ReverseDataset};
use transformer_course::generate::{
    correct_rows, exact_match, reverse_digits, sign_test_p_value,
};
use transformer_course::train::{
    reverse_data, test_data, TrainOptions, TEST_SAMPLES,
};
use transformer_course::transformer::Transformer;
use transformer_course::viz::{
    attention_maps, attention_module, content_matching, format_matrix,
    head_ablation, mean_over_heads, row_maxima, with_head_off, AttentionKind,
    AttentionMaps,
};
use transformer_course::vocab::{MAX_LEN, MIN_LEN};
use workbench::checkpoint::{
    ensure_reverse_task, load_checkpoint, DEFAULT_CHECKPOINT,
};
use workbench::cli::{run_main, select_device, train_first, DeviceChoice};
use workbench::output::{check_outputs_and_inputs, Batch};
use workbench::plot::{heatmaps, Figure, Format, Panel};

/// The slow learner chapter 09 trains with --init framework-default.
const ABLATION: &str = "checkpoints/framework-default.safetensors";

/// Every file this program writes into --out-dir.
const FIGURES: [&str; 7] = [
    "11_cross_attention.svg",
    "11_cross_attention.png",
    "11_cross_attention_vs_ablation.svg",
    "11_heads_encoder_self.svg",
    "11_heads_decoder_self.svg",
    "11_heads_cross.svg",
    "11_head_ablation.svg",
];

/// Print and draw the trained model's attention for one input.
#[derive(Parser)]
struct Args {
    /// Digits to feed the model (3 to 12); default 7 3 0 9 5 1 8.
    digits: Vec<String>,
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    checkpoint: PathBuf,
    /// The slow learner of chapter 09, drawn beside the main model [default:
    /// checkpoints/framework-default.safetensors, when that file exists].
    #[arg(long)]
    ablation: Option<PathBuf>,
    /// Where the figures go (SVG, and one PNG).
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
    /// A quick look: the head ablation on 100 validation samples and the
    /// hypothesis on 500 test samples, instead of 1,000 and 5,000.
    #[arg(long)]
    quick: bool,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
}

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn cross_panel(maps: &AttentionMaps, title: &str) -> Panel {
    Panel {
        title: title.to_string(),
        matrix: mean_over_heads(maps.cross.last().expect("at least one layer")),
        row_labels: maps.target_labels.clone(),
        col_labels: maps.source_labels.clone(),
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let digits = if args.digits.is_empty() {
        vec![7, 3, 0, 9, 5, 1, 8]
    } else {
        parse_digits(&args.digits)?
    };
    anyhow::ensure!(
        digits.len() >= MIN_LEN,
        "{} digit(s) is fewer than the model ever saw: give {MIN_LEN} to {MAX_LEN}",
        digits.len()
    );
    // Every file and checkpoint is checked before anything is drawn.
    let out = &args.out_dir;
    let ablation_path = args
        .ablation
        .clone()
        .or_else(|| Some(PathBuf::from(ABLATION)).filter(|p| p.exists()));
    let figures: Vec<PathBuf> = FIGURES.iter().map(|n| out.join(n)).collect();
    let outputs: Vec<(&str, &Path)> =
        figures.iter().map(|p| ("a figure", p.as_path())).collect();
    let mut inputs = vec![("--checkpoint", args.checkpoint.as_path())];
    inputs.extend(ablation_path.as_deref().map(|p| ("--ablation", p)));
    check_outputs_and_inputs(&outputs, &inputs)?;
    let device = select_device(args.device)?;
    let load = |path: &Path| -> anyhow::Result<Transformer> {
        let (_vs, model) =
            load_checkpoint(path, device).map_err(train_first)?;
        ensure_reverse_task(&model, path)?;
        Ok(model)
    };
    let model = load(&args.checkpoint)?;
    let slow = ablation_path.as_deref().map(load).transpose()?;

    // The figures appear together at the end, or not at all; each is announced
    // once it is in place.
    let mut files = Batch::default();
    let mut wrote = Vec::new();
    let maps = attention_maps(&model, &digits)?;
    let main = print_matrix(&maps, &digits, model.config.init);
    let title = "Cross-attention (last layer, mean of heads)";
    let fig = Figure::weights(title, 1, true, AXES);
    for name in ["11_cross_attention.svg", "11_cross_attention.png"] {
        let path = out.join(name);
        let one = std::slice::from_ref(&main);
        files.stage_bytes(&path, &heatmaps(Format::of(&path)?, &fig, one)?)?;
        wrote.push(format!("wrote {}", path.display()));
    }
    match &slow {
        Some(slow) => {
            let note = compare_with_slow_learner(
                slow, &digits, &main, out, &mut files,
            )?;
            wrote.push(note);
        }
        None => {
            println!("\n(no {ABLATION} yet: train it to compare, with");
            println!("  cargo run --release --bin 09_train_reverse -- \\");
            println!("      --init framework-default --out {ABLATION})");
        }
    }
    wrote.extend(draw_every_head(&maps, out, &mut files)?);
    wrote.push(which_heads_matter(&model, out, &mut files, args.quick)?);
    files.commit()?;
    println!();
    for line in wrote {
        println!("{line}");
    }
    Ok(())
}

const AXES: (&str, &str) = ("source (encoder)", "decoder input");

/// How a figure names the init a checkpoint was trained from (its metadata).
fn init_phrase(init: Init) -> String {
    match init {
        Init::Paper => "the course's init".into(),
        other => format!("the {} init", other.name()),
    }
}

// ANCHOR: print_matrix
/// The last layer's cross-attention, averaged over heads, and where each row
/// looks hardest.
fn print_matrix(maps: &AttentionMaps, digits: &[i64], init: Init) -> Panel {
    println!("input {digits:?} -> prediction {:?}\n", maps.prediction);
    let main =
        cross_panel(maps, &format!("trained with {}", init_phrase(init)));
    let heads = maps.cross[0].len();
    println!("cross-attention, last layer, mean of {heads} heads");
    println!("(rows: decoder input, columns: source)");
    let (rows, cols) = (&main.row_labels, &main.col_labels);
    print!("{}", format_matrix(&main.matrix, rows, cols));
    println!();
    let maxima = row_maxima(&main.matrix, digits.len());
    for (i, (j, w, ok)) in maxima.iter().enumerate() {
        let (row, col) = (&rows[i], &cols[*j]);
        let verdict = if *ok { "=" } else { "≠" };
        println!(
            "row {i} ({row:>5}) -> column {j} ({col:>5}) {w:.2}  \
             {verdict} the mirrored position"
        );
    }
    let min_w = maxima.iter().map(|m| m.1).fold(f64::MAX, f64::min);
    let all = maxima.iter().all(|m| m.2);
    let anti = if all { "yes, every row" } else { "no" };
    println!("anti-diagonal: {anti}  (smallest row maximum {min_w:.2})");
    main
}
// ANCHOR_END: print_matrix

// ANCHOR: ablation
/// The same input through chapter 09's slow learner: a blurred alignment.
fn compare_with_slow_learner(
    slow: &Transformer,
    digits: &[i64],
    main: &Panel,
    out: &Path,
    files: &mut Batch,
) -> anyhow::Result<String> {
    let slow_maps = attention_maps(slow, digits)?;
    let title =
        format!("{} (chapter 09's slow run)", init_phrase(slow.config.init));
    let other = cross_panel(&slow_maps, &title);
    let prediction = &slow_maps.prediction;
    println!(
        "\nthe slow learner on the same input -> prediction {prediction:?}"
    );
    let (rows, cols) = (&other.row_labels, &other.col_labels);
    print!("{}", format_matrix(&other.matrix, rows, cols));
    let spread = |r: &&Vec<f64>| r.iter().filter(|&&w| w >= 0.1).count() >= 2;
    let blurred = other.matrix.iter().filter(spread).count();
    let n = other.matrix.len();
    println!("rows spread over 2+ columns (≥ 0.10 each): {blurred} of {n}");
    let path = out.join("11_cross_attention_vs_ablation.svg");
    let title = "Same input, two inits: sharp vs blurred alignment";
    let fig = Figure::weights(title, 2, true, AXES);
    let both = [main.clone(), other];
    files.stage_bytes(&path, &heatmaps(Format::Svg, &fig, &both)?)?;
    Ok(format!("wrote {}", path.display()))
}
// ANCHOR_END: ablation

/// Every layer and head of all three kinds of attention, one figure per kind.
fn draw_every_head(
    maps: &AttentionMaps,
    out: &Path,
    files: &mut Batch,
) -> anyhow::Result<Vec<String>> {
    let (src, tgt) = (&maps.source_labels, &maps.target_labels);
    let mut wrote = Vec::new();
    let kinds = [
        (
            "encoder_self",
            "Encoder self-attention",
            &maps.encoder_self,
            src,
            src,
        ),
        (
            "decoder_self",
            "Decoder self-attention",
            &maps.decoder_self,
            tgt,
            tgt,
        ),
        ("cross", "Cross-attention", &maps.cross, tgt, src),
    ];
    for (file, title, layers, rows, cols) in kinds {
        let heads = layers[0].len();
        let mut panels = Vec::new();
        for (l, per_head) in layers.iter().enumerate() {
            for (h, m) in per_head.iter().enumerate() {
                panels.push(Panel {
                    title: format!("layer {l}, head {h}"),
                    matrix: m.clone(),
                    row_labels: rows.clone(),
                    col_labels: cols.clone(),
                });
            }
        }
        let path = out.join(format!("11_heads_{file}.svg"));
        let title = format!("{title}: every layer × head");
        let fig = Figure::weights(&title, heads, false, ("key", "query"));
        files.stage_bytes(&path, &heatmaps(Format::Svg, &fig, &panels)?)?;
        let n = layers.len();
        wrote.push(format!(
            "wrote {} ({n} layers × {heads} heads)",
            path.display()
        ));
    }
    Ok(wrote)
}

/// One head: its kind, layer and index.
type Head = (AttentionKind, usize, i64);

// ANCHOR: costliest_head
/// The head whose removal cost the most, tested the paired way: the same
/// samples decoded with every head on and with that head off, counting the
/// sequences that flip each way. It is one head of 24 picked after looking,
/// so its p is also shown multiplied by 24 (Bonferroni, as in chapter 10).
fn costliest_head(
    model: &Transformer,
    val: &ReverseDataset,
    table: &[Vec<Vec<f64>>],
    batch: i64,
) {
    let mut cells = Vec::new();
    for (k, layers) in table.iter().enumerate() {
        for (l, heads) in layers.iter().enumerate() {
            for (h, &rate) in heads.iter().enumerate() {
                cells.push((rate, AttentionKind::ALL[k], l, h));
            }
        }
    }
    let m = cells.len();
    let (_, kind, l, h) = cells
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("the model has heads");
    let rows = || correct_rows(model, &val.src, &val.tgt, batch);
    let on = rows();
    let off = with_head_off(attention_module(model, kind, l), h as i64, rows);
    let flips = |from: bool| {
        on.iter()
            .zip(&off)
            .filter(|&(&a, &b)| a == from && b != from)
            .count()
    };
    let (lost, gained) = (flips(true), flips(false));
    let p = sign_test_p_value(lost, gained);
    println!(
        "the costliest head, {}, layer {l}, head {h}, on and off the same \
         samples:\n  right only with it on {lost}, only with it off {gained}: \
         sign test p = {p:.3};\n  one head of {m}, so p × {m} = {:.3}",
        kind.name(),
        (p * m as f64).min(1.0)
    );
}
// ANCHOR_END: costliest_head

/// Prints a [kind][layer][head] table, one line per kind and layer.
fn print_per_head<T>(table: &[Vec<Vec<T>>], cell: impl Fn(&T) -> String) {
    let heads = table[0][0].len();
    print!("{:22}", "");
    (0..heads).for_each(|h| print!("{:>12}", format!("head {h}")));
    println!();
    for (kind, layers) in AttentionKind::ALL.iter().zip(table) {
        for (l, row) in layers.iter().enumerate() {
            print!("{:22}", format!("{}, layer {l}", kind.name()));
            row.iter().for_each(|v| print!("{:>12}", cell(v)));
            println!();
        }
    }
}

/// Which heads the model needs (ablation), which match by content, and
/// whether the strongest content matcher is behind chapter 10's misses.
fn which_heads_matter(
    model: &Transformer,
    out: &Path,
    files: &mut Batch,
    quick: bool,
) -> anyhow::Result<String> {
    let opts = TrainOptions::default(); // the data chapter 09 trained on
    let (train, all_val) = reverse_data(&opts);
    let (n_val, n_test) = if quick {
        (100, 500)
    } else {
        (1_000, TEST_SAMPLES)
    };
    let val = all_val.first(n_val);
    // ANCHOR: head_ablation
    let all_on = exact_match(model, &val.src, &val.tgt, opts.eval_batch);
    // table[kind][layer][head]: exact match with that one head off
    let table = head_ablation(model, &val);
    // ANCHOR_END: head_ablation
    println!(
        "\nexact match on the {} validation samples with one head off \
         (all heads on: {all_on:.3})",
        val.len()
    );
    print_per_head(&table, |v| format!("{v:.3}"));
    costliest_head(model, &val, &table, opts.eval_batch);
    // Drawn as the change in correct sequences, on a scale centred on "no
    // change": on a 0-to-1 scale every cell would be the same dark blue.
    let n = val.len() as f64;
    let change = |v: &f64| ((v - all_on) * n).round();
    let widest = table.iter().flatten().flatten().map(|v| change(v).abs());
    let reach = widest.fold(4.0, f64::max);
    let reach = 2.0 * (reach / 2.0).ceil(); // even, so the bar's ticks are whole
    let panels: Vec<Panel> = AttentionKind::ALL
        .iter()
        .zip(&table)
        .map(|(kind, layers)| Panel {
            title: kind.name().to_string(),
            matrix: layers
                .iter()
                .map(|heads| heads.iter().map(change).collect())
                .collect(),
            row_labels: (0..layers.len()).map(|l| format!("{l}")).collect(),
            col_labels: (0..layers[0].len()).map(|h| format!("{h}")).collect(),
        })
        .collect();
    let path = out.join("11_head_ablation.svg");
    let title = format!(
        "Correct sequences gained (+) or lost (−) with one head off, of {} \
         (all heads on: {})",
        val.len(),
        (all_on * n).round()
    );
    let fig = Figure {
        range: (-reach, reach),
        decimals: 0,
        ..Figure::weights(&title, 3, true, ("head", "layer"))
    };
    files.stage_bytes(&path, &heatmaps(Format::Svg, &fig, &panels)?)?;
    let wrote = format!("wrote {}", path.display());

    // ANCHOR: content_matching
    let sample = val.first(500);
    // content[kind][layer][head]: (weight on same-digit keys, their share)
    let content = content_matching(model, &sample);
    // ANCHOR_END: content_matching
    println!(
        "\ncontent matching on 500 validation samples: the weight a digit's \
         query puts on\nkeys holding the same digit elsewhere / the share of \
         keys those are"
    );
    print_per_head(&content, |(w, s)| format!("{w:.2}/{s:.2}"));
    // The head whose weight on same-digit keys most exceeds their share.
    let mut best: (Head, f64) = ((AttentionKind::Cross, 0, 0), f64::MIN);
    for (kind, layers) in AttentionKind::ALL.iter().zip(&content) {
        for (l, row) in layers.iter().enumerate() {
            for (h, (w, s)) in row.iter().enumerate() {
                if w / s > best.1 {
                    best = ((*kind, l, h as i64), w / s);
                }
            }
        }
    }
    let ((kind, l, h), ratio) = best;
    println!(
        "strongest content matcher: {}, layer {l}, head {h} \
         ({ratio:.1} times the share)",
        kind.name()
    );
    let test = test_data(&opts, &train, &all_val, n_test);
    test_the_hypothesis(model, &test, best.0)?;
    Ok(wrote)
}

/// Does head `head` cause chapter 10's misses on runs of repeated digits? If
/// it does, switching it off should remove misses on inputs with a run, and
/// its weights on a failing input should spread over the run.
fn test_the_hypothesis(
    model: &Transformer,
    test: &ReverseDataset,
    head: Head,
) -> anyhow::Result<()> {
    let (kind, l, h) = head;
    let mha = attention_module(model, kind, l);
    let seqs = digit_rows(test);
    // ANCHOR: hypothesis
    let on = correct_rows(model, &test.src, &test.tgt, 500);
    let off = with_head_off(mha, h, || {
        correct_rows(model, &test.src, &test.tgt, 500)
    });
    let has_run = |s: &[i64]| s.windows(2).any(|w| w[0] == w[1]);
    // ANCHOR_END: hypothesis
    println!(
        "\nthe {} test samples of chapter 10, misses with {}, layer {l}, \
         head {h} on and off:",
        test.len(),
        kind.name()
    );
    for (label, want_run) in
        [("with a run of repeated digits", true), ("without", false)]
    {
        let rows: Vec<usize> = (0..seqs.len())
            .filter(|&i| has_run(&seqs[i]) == want_run)
            .collect();
        let miss = |r: &[bool]| rows.iter().filter(|&&i| !r[i]).count();
        println!(
            "  {label:<30} n={:5}  misses: on {:3}, off {:4}",
            rows.len(),
            miss(&on),
            miss(&off)
        );
    }
    let failed: Vec<usize> = (0..on.len()).filter(|&i| !on[i]).collect();
    let join = |d: &[i64]| d.iter().map(|x| x.to_string()).collect::<String>();
    println!("  the misses with every head on, and the same inputs with the head off:");
    for &i in failed.iter().take(8) {
        let got = reverse_digits(model, &seqs[i]);
        let got_off = with_head_off(mha, h, || reverse_digits(model, &seqs[i]));
        println!(
            "  {:>12} -> on: {:>12}  off: {:>12}",
            join(&seqs[i]),
            join(&got),
            join(&got_off)
        );
    }
    // The first miss short enough for its matrix to fit the page.
    if let Some(&i) = failed.iter().find(|&&i| seqs[i].len() <= 11) {
        let maps = attention_maps(model, &seqs[i])?;
        let (rows, cols) = match kind {
            AttentionKind::EncoderSelf => {
                (&maps.source_labels, &maps.source_labels)
            }
            AttentionKind::DecoderSelf => {
                (&maps.target_labels, &maps.target_labels)
            }
            AttentionKind::Cross => (&maps.target_labels, &maps.source_labels),
        };
        let m = match kind {
            AttentionKind::EncoderSelf => &maps.encoder_self[l][h as usize],
            AttentionKind::DecoderSelf => &maps.decoder_self[l][h as usize],
            AttentionKind::Cross => &maps.cross[l][h as usize],
        };
        println!(
            "\n{}, layer {l}, head {h} on the miss {} (rows: queries, \
             columns: keys)",
            kind.name(),
            join(&seqs[i])
        );
        print!("{}", format_matrix(m, rows, cols));
    }
    Ok(())
}
