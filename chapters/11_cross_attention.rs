//! Chapter 11: does the trained model align backwards? Its cross-attention, as numbers
//! and as heatmaps.
//! cargo run --release --bin 11_cross_attention            (the seed's 7 3 0 9 5 1 8)
//! cargo run --release --bin 11_cross_attention -- 1 2 3 4
use std::path::{Path, PathBuf};

use clap::Parser;
use transformer_course::data::parse_digits;
use transformer_course::train::{load_checkpoint, reverse_config, select_device, DeviceChoice, DEFAULT_CHECKPOINT};
use transformer_course::viz::{attention_maps, draw_heatmaps, format_matrix, mean_over_heads, row_maxima, AttentionMaps, Panel};

#[derive(Parser)]
#[command(about = "Print and draw the trained model's attention for one input")]
struct Args {
    /// Digits to feed the model (1 to 12); default 7 3 0 9 5 1 8.
    digits: Vec<String>,
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    checkpoint: PathBuf,
    /// The slow learner of chapter 09; drawn beside the main model when the file exists.
    #[arg(long, default_value = "checkpoints/framework-default.safetensors")]
    ablation: PathBuf,
    /// Where the figures go (SVG for the book, PNG for everything else).
    #[arg(long, default_value = "book/src/figures")]
    out_dir: PathBuf,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
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
    let digits = if args.digits.is_empty() { vec![7, 3, 0, 9, 5, 1, 8] } else { parse_digits(&args.digits)? };
    let device = select_device(args.device)?;
    let (_vs, model) = load_checkpoint(&args.checkpoint, &reverse_config(Default::default()), device)?;

    // ANCHOR: print_matrix
    let maps = attention_maps(&model, &digits)?;
    println!("input {digits:?} -> prediction {:?}\n", maps.prediction);
    let main = cross_panel(&maps, "trained with the course's init");
    println!("cross-attention, last layer, mean of {} heads (rows: decoder input, columns: source)", maps.cross[0].len());
    print!("{}", format_matrix(&main.matrix, &main.row_labels, &main.col_labels));
    println!();
    let maxima = row_maxima(&main.matrix, digits.len());
    for (i, (j, w, ok)) in maxima.iter().enumerate() {
        println!(
            "row {i} ({:>5}) looks hardest at column {j} ({:>5}) with weight {w:.2}  {}",
            main.row_labels[i],
            main.col_labels[*j],
            if *ok { "= the mirrored position" } else { "≠ the mirrored position" }
        );
    }
    let min_w = maxima.iter().map(|m| m.1).fold(f64::MAX, f64::min);
    let anti = maxima.iter().all(|m| m.2);
    println!("anti-diagonal: {}  (smallest row maximum {min_w:.2})", if anti { "yes, every row" } else { "no" });
    // ANCHOR_END: print_matrix

    let out = &args.out_dir;
    let (x, y) = ("source (encoder)", "decoder input");
    for ext in ["svg", "png"] {
        let path = out.join(format!("11_cross_attention.{ext}"));
        draw_heatmaps(&path, "Cross-attention (last layer, mean of heads)", std::slice::from_ref(&main), 1, true, x, y)?;
        println!("wrote {}", path.display());
    }

    // ANCHOR: ablation
    if args.ablation.exists() {
        let (_vs2, slow) = load_checkpoint(&args.ablation, &reverse_config(Default::default()), device)?;
        let slow_maps = attention_maps(&slow, &digits)?;
        let other = cross_panel(&slow_maps, "framework-default init (chapter 09's slow run)");
        println!("\nthe slow learner on the same input -> prediction {:?}", slow_maps.prediction);
        print!("{}", format_matrix(&other.matrix, &other.row_labels, &other.col_labels));
        let blurred = other.matrix.iter().filter(|r| r.iter().filter(|&&w| w >= 0.1).count() >= 2).count();
        println!("rows spread over two or more positions (weight ≥ 0.10 each): {blurred} of {}", other.matrix.len());
        let path = out.join("11_cross_attention_vs_ablation.svg");
        draw_heatmaps(&path, "Same input, two inits: sharp vs blurred alignment", &[main.clone(), other], 2, true, x, y)?;
        println!("wrote {}", path.display());
    } else {
        println!("\n(no {} yet: train it with `cargo run --release --bin 09_train_reverse -- --init framework-default --out {}` to compare)", args.ablation.display(), args.ablation.display());
    }
    // ANCHOR_END: ablation

    // ANCHOR: all_heads
    let kinds = [
        ("encoder_self", "Encoder self-attention", &maps.encoder_self, &maps.source_labels, &maps.source_labels),
        ("decoder_self", "Decoder self-attention (causal)", &maps.decoder_self, &maps.target_labels, &maps.target_labels),
        ("cross", "Cross-attention", &maps.cross, &maps.target_labels, &maps.source_labels),
    ];
    println!();
    for (file, title, layers, rows, cols) in kinds {
        let heads = layers[0].len();
        let panels: Vec<Panel> = layers
            .iter()
            .enumerate()
            .flat_map(|(l, per_head)| {
                per_head.iter().enumerate().map(move |(h, m)| Panel {
                    title: format!("layer {l}, head {h}"),
                    matrix: m.clone(),
                    row_labels: rows.clone(),
                    col_labels: cols.clone(),
                })
            })
            .collect();
        let path: PathBuf = Path::new(out).join(format!("11_heads_{file}.svg"));
        draw_heatmaps(&path, &format!("{title}: every layer × head"), &panels, heads, false, "key", "query")?;
        println!("wrote {} ({} layers × {heads} heads)", path.display(), layers.len());
    }
    // ANCHOR_END: all_heads
    Ok(())
}
