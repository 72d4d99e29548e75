//! Chapter 11: does the trained model align backwards? Its cross-attention, as
//! numbers and as heatmaps.
//! cargo run --release --bin 11_cross_attention            (7 3 0 9 5 1 8)
//! cargo run --release --bin 11_cross_attention -- 1 2 3 4
use std::path::{Path, PathBuf};

use clap::Parser;
use transformer_course::checkpoint::{
    ensure_reverse_task, load_checkpoint, DEFAULT_CHECKPOINT,
};
use transformer_course::cli::{
    run_main, select_device, train_first, DeviceChoice,
};
use transformer_course::config::Init;
use transformer_course::data::parse_digits;
use transformer_course::output::{check_writable, Batch};
use transformer_course::plot::{heatmaps, Figure, Format, Panel};
use transformer_course::transformer::Transformer;
use transformer_course::viz::{
    attention_maps, format_matrix, mean_over_heads, row_maxima, AttentionMaps,
};
use transformer_course::vocab::{MAX_LEN, MIN_LEN};

/// The slow learner chapter 09 trains with --init framework-default.
const ABLATION: &str = "checkpoints/framework-default.safetensors";

/// Every file this program writes into --out-dir.
const FIGURES: [&str; 6] = [
    "11_cross_attention.svg",
    "11_cross_attention.png",
    "11_cross_attention_vs_ablation.svg",
    "11_heads_encoder_self.svg",
    "11_heads_decoder_self.svg",
    "11_heads_cross.svg",
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
    for name in FIGURES {
        check_writable(&out.join(name))?;
    }
    let device = select_device(args.device)?;
    let load = |path: &Path| -> anyhow::Result<Transformer> {
        let (_vs, model) =
            load_checkpoint(path, device).map_err(train_first)?;
        ensure_reverse_task(&model, path)?;
        Ok(model)
    };
    let model = load(&args.checkpoint)?;
    let ablation_path = args
        .ablation
        .clone()
        .or_else(|| Some(PathBuf::from(ABLATION)).filter(|p| p.exists()));
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
