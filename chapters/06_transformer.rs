//! Chapter 06: the three masks drawn as grids, and the whole model counted.
//! cargo run --release --bin 06_transformer
use std::path::PathBuf;

use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::data::encode_pair;
use transformer_course::layers::parameter_count;
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask, Transformer,
};
use transformer_course::vocab::tokens_to_words;
use workbench::cli::run_main;
use workbench::output::check_writable;
use workbench::plot::{heatmaps, save, Figure, Panel};

/// Chapter 06: the three masks as grids, and the whole model's parameters.
#[derive(Parser)]
struct Args {
    /// Where the picture of the masks goes.
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
}

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

/// A [rows, cols] bool mask as a panel: 1 where masked.
fn mask_panel(
    title: &str,
    mask: &Tensor,
    rows: &[String],
    cols: &[String],
) -> Panel {
    let m = mask.to_kind(Kind::Double);
    let matrix = (0..m.size()[0])
        .map(|i| Vec::<f64>::try_from(&m.get(i)).expect("a row"))
        .collect();
    let (row_labels, col_labels) = (rows.to_vec(), cols.to_vec());
    Panel {
        title: title.to_string(),
        matrix,
        row_labels,
        col_labels,
    }
}

/// Draws a [L, L] or [1, L] bool mask as a grid: `■` masked, `·` visible.
fn format_mask(mask: &Tensor) -> String {
    let m = mask.to_device(Device::Cpu).to_kind(Kind::Int64);
    let (rows, cols) = m.size2().expect("a 2-D mask");
    let mut out = String::new();
    for i in 0..rows {
        for j in 0..cols {
            out += if m.int64_value(&[i, j]) != 0 {
                " ■"
            } else {
                " ·"
            };
        }
        out.push('\n');
    }
    out
}

fn run(args: Args) -> anyhow::Result<()> {
    let figure = args.out_dir.join("06_masks.svg");
    check_writable(&figure)?;
    tch::manual_seed(0);
    // 7 3 0 9 5 <eos> and the decoder input training would give it,
    // <bos> 5 9 0 3 7 <eos> (the target less its last token), both cut to 8 tokens.
    let (src, tgt) = encode_pair(&[7, 3, 0, 9, 5]);
    let src = Tensor::from_slice(&src[..8]).view([1, 8]);
    let tgt_in = Tensor::from_slice(&tgt[..8]).view([1, 8]);

    // ANCHOR: grids
    println!("■ = masked (true), · = visible\n");
    let pad = make_padding_mask(&src);
    println!(
        "encoder self-attention and cross-attention: padding mask of src {:?}",
        pad.size()
    );
    print!("{}", format_mask(&pad.view([1, 8])));
    let causal = make_causal_mask(8, Device::Cpu);
    println!(
        "\ndecoder self-attention, part 1: causal mask {:?}",
        causal.size()
    );
    print!("{}", format_mask(&causal.view([8, 8])));
    let tgt_pad = make_padding_mask(&tgt_in);
    println!(
        "\ndecoder self-attention, part 2: padding mask of tgt_in {:?}",
        tgt_pad.size()
    );
    print!("{}", format_mask(&tgt_pad.view([1, 8])));
    let combined = make_target_mask(&tgt_in);
    println!(
        "\ndecoder self-attention: causal | padding {:?}",
        combined.size()
    );
    print!("{}", format_mask(&combined.view([8, 8])));
    // ANCHOR_END: grids

    // The same four masks as pictures: dark = masked.
    let words = |ids: &Tensor| -> Vec<String> {
        let ids: Vec<i64> = Vec::try_from(&ids.view([-1])).expect("ids");
        tokens_to_words(&ids)
            .split(' ')
            .map(str::to_string)
            .collect()
    };
    let (src_words, tgt_words) = (words(&src), words(&tgt_in));
    let keys = |w: &[String]| w.to_vec();
    let panels = [
        mask_panel(
            "src padding",
            &pad.view([1, 8]),
            &["".into()],
            &keys(&src_words),
        ),
        mask_panel("causal", &causal.view([8, 8]), &tgt_words, &tgt_words),
        mask_panel(
            "tgt_in padding",
            &tgt_pad.view([1, 8]),
            &["".into()],
            &tgt_words,
        ),
        mask_panel(
            "causal | padding",
            &combined.view([8, 8]),
            &tgt_words,
            &tgt_words,
        ),
    ];
    let mut fig = Figure::weights(
        "The four masks of one example (dark = masked)",
        2,
        false,
        ("key", "query"),
    );
    fig.cell = (36, 36);
    save(&figure, |format| heatmaps(format, &fig, &panels))?;

    // ANCHOR: count
    let vs = nn::VarStore::new(Device::Cpu);
    let config = TransformerConfig::reverse_task();
    let model = Transformer::new(vs.root(), config)?;
    println!("\n{config:#?}");
    let count = |prefix: &str| -> i64 {
        let vars = vs.variables();
        let under = vars.iter().filter(|(n, _)| n.starts_with(prefix));
        under.map(|(_, t)| t.numel() as i64).sum()
    };
    println!("encoder   {:>9}", count("encoder."));
    println!("decoder   {:>9}", count("decoder."));
    println!("out_proj  {:>9}", count("out_proj."));
    println!("total     {:>9}", parameter_count(&vs));
    // ANCHOR_END: count

    let logits = model.forward(&src, &tgt_in, false);
    println!(
        "\nforward: src {:?} + tgt_in {:?} -> logits {:?}",
        src.size(),
        tgt_in.size(),
        logits.size()
    );

    // ANCHOR: invalid
    let bad = TransformerConfig {
        d_model: 130,
        ..config
    };
    match Transformer::new(nn::VarStore::new(Device::Cpu).root(), bad) {
        Ok(_) => println!("d_model=130, h=4 was accepted (unexpected)"),
        Err(e) => println!("d_model=130, h=4 -> error: {e}"),
    }
    // ANCHOR_END: invalid
    println!("\nwrote {}", figure.display());
    Ok(())
}
