//! Chapter 01: why the token embedding is multiplied by √d, and why its init
//! matters. cargo run --release --bin 01_embedding
use std::path::{Path, PathBuf};

use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::embedding::{
    sinusoidal_position_encoding, TokenAndPosition,
};
use transformer_course::vocab::PAD_ID;
use workbench::cli::run_main;
use workbench::output::{check_writable, Batch};
use workbench::plot::{heatmaps, Figure, Format, Panel};

/// Chapter 01: token embeddings, the sinusoidal position table, and how the
/// init decides whether position survives.
#[derive(Parser)]
struct Args {
    /// Where the two figures of the position table go.
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
}

const FIGURES: [&str; 2] =
    ["01_position_table.svg", "01_position_similarity.svg"];

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    for name in FIGURES {
        check_writable(&args.out_dir.join(name))?;
    }
    tch::manual_seed(0);
    let cfg = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let (vocab, d_model, max_len) = (cfg.src_vocab, cfg.d_model, cfg.max_len);
    let sqrt_d = (d_model as f64).sqrt();
    println!("vocab={vocab} d_model={d_model} max_len={max_len}");
    println!("√d_model = {sqrt_d:.2}\n");

    // ANCHOR: signals
    let pe = sinusoidal_position_encoding(max_len, d_model);
    let stat = |t: &Tensor| t.double_value(&[]);
    let pe_std = stat(&pe.std(true));
    println!(
        "position signal: min {:+.3}  max {:+.3}  std {pe_std:.3}\n",
        stat(&pe.min()),
        stat(&pe.max()),
    );

    let ids = Tensor::arange_start(1, vocab, (Kind::Int64, Device::Cpu)); // no PAD
    println!("token signal by init  std    token/position  ‖PAD row‖");
    for init in [Init::Paper, Init::FrameworkDefault, Init::TchDefault] {
        let vs = nn::VarStore::new(Device::Cpu);
        let cfg = TransformerConfig { init, ..cfg };
        let layer = TokenAndPosition::new(vs.root(), vocab, &cfg);
        let token_signal = ids.apply(&layer.emb) * sqrt_d; // [12, d]
        let std = stat(&token_signal.std(true));
        let pad_row_norm = stat(&layer.emb.ws.get(PAD_ID).norm());
        let ratio = std / pe_std;
        let name = init.name();
        println!("{name:<20} {std:6.3}  {ratio:14.1}  {pad_row_norm:9.3}");
    }
    // ANCHOR_END: signals

    println!("\nThe table's first rows and columns (even: sin, odd: cos):");
    println!("pos   dim0    dim1    dim2    dim3  …  dim126  dim127");
    for pos in 0..5 {
        let v = |i: i64| pe.double_value(&[pos, i]);
        println!(
            "{pos:3} {:+.3}  {:+.3}  {:+.3}  {:+.3}  …  {:+.3}  {:+.3}",
            v(0),
            v(1),
            v(2),
            v(3),
            v(126),
            v(127)
        );
    }

    // ANCHOR: similarity
    // Low dimensions turn fast, high ones barely move: nearby positions differ
    // in the first columns, distant ones in the later ones too.
    let near = stat(&(pe.get(1) - pe.get(0)).norm());
    let far = stat(&(pe.get(13) - pe.get(0)).norm());
    println!("\ndistance between position rows:");
    println!("  ‖pe[1] - pe[0]‖ = {near:.3}   ‖pe[13] - pe[0]‖ = {far:.3}");
    // Cosine similarity of every pair of rows: [L, L].
    let unit = &pe / pe.norm_scalaropt_dim(2, [1], true);
    let similarity = unit.matmul(&unit.tr());
    println!("cosine similarity of position 0 with positions 0..=13:");
    let row: Vec<String> = (0..max_len)
        .map(|j| format!("{:.2}", similarity.double_value(&[0, j])))
        .collect();
    println!("  {}", row.join(" "));
    // ANCHOR_END: similarity

    draw_figures(&pe, &similarity, &args.out_dir)
}

/// The position table and the similarity of its rows, as heatmaps.
fn draw_figures(
    pe: &Tensor,
    similarity: &Tensor,
    out: &Path,
) -> anyhow::Result<()> {
    let (max_len, d_model) = (pe.size()[0], pe.size()[1]);
    let mut files = Batch::default();
    let table = Panel {
        title: format!("pe: {max_len} positions × {d_model} dimensions"),
        matrix: matrix(pe),
        row_labels: (0..max_len).map(|p| p.to_string()).collect(),
        col_labels: (0..d_model)
            .map(|d| {
                if d % 16 == 0 {
                    d.to_string()
                } else {
                    String::new()
                }
            })
            .collect(),
    };
    let fig = Figure {
        title: "The sinusoidal position table",
        columns: 1,
        values: false,
        axes: ("dimension", "position"),
        cell: (6, 18),
        range: (-1.0, 1.0),
        decimals: 2,
    };
    let path = out.join(FIGURES[0]);
    files.stage_bytes(&path, &heatmaps(Format::Svg, &fig, &[table])?)?;
    let labels: Vec<String> = (0..max_len).map(|p| p.to_string()).collect();
    let sim = Panel {
        title: "cosine similarity of pe[i] and pe[j]".into(),
        matrix: matrix(similarity),
        row_labels: labels.clone(),
        col_labels: labels,
    };
    let fig = Figure {
        title: "Nearby positions look alike",
        cell: (26, 26),
        axes: ("position j", "position i"),
        range: (0.6, 1.0), // every pair is at least 0.66 alike
        ..fig
    };
    let path2 = out.join(FIGURES[1]);
    files.stage_bytes(&path2, &heatmaps(Format::Svg, &fig, &[sim])?)?;
    files.commit()?;
    println!("\nwrote {}\nwrote {}", path.display(), path2.display());
    Ok(())
}

/// A 2-D tensor as rows of f64.
fn matrix(t: &Tensor) -> Vec<Vec<f64>> {
    let t = t.to_kind(Kind::Double);
    (0..t.size()[0])
        .map(|i| Vec::<f64>::try_from(&t.get(i)).expect("a row of f64"))
        .collect()
}
