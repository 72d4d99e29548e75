//! Chapter 04: Pre-Norm layers and why the stack ends with one more LayerNorm.
//! cargo run --release --bin 04_encoder
use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::data::source_tensor;
use transformer_course::encoder::Encoder;
use transformer_course::layers::parameter_count;
use transformer_course::transformer::make_padding_mask;
use transformer_course::vocab::NUM_OFFSET;
use workbench::cli::run_main;

/// Chapter 04: Pre-Norm encoder layers and why the stack ends with ln_final.
#[derive(Parser)]
struct Args {}

fn main() {
    Args::parse();
    run_main(run)
}

fn run() -> anyhow::Result<()> {
    tch::manual_seed(0);
    let cfg = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let (vocab, max_len) = (cfg.src_vocab, cfg.max_len);
    let src = source_tensor(&[7, 3, 0, 9, 5], Device::Cpu); // [1, 14], padded
    let mask = make_padding_mask(&src);

    let vs = nn::VarStore::new(Device::Cpu);
    let enc = Encoder::new(vs.root(), &cfg)?;
    let memory = enc.forward(&src, &mask, false);
    println!("src {:?} -> memory {:?}", src.size(), memory.size());
    let params = parameter_count(&vs);
    println!("encoder parameters (2 layers): {params}\n");

    // ANCHOR: residual_growth
    // A deeper stack makes the point: in Pre-Norm the residual stream x is only
    // ever added to, never normalised, so its scale drifts upward layer after
    // layer.
    let vs = nn::VarStore::new(Device::Cpu);
    let deep = Encoder::new(
        vs.root(),
        &TransformerConfig {
            num_layers: 12,
            ..cfg
        },
    )?;
    let digits = (Kind::Int64, Device::Cpu);
    // Ids from NUM_OFFSET (3, digit 0) up to the vocabulary size: digits only,
    // no PAD, so every position is real.
    let src = Tensor::randint_low(NUM_OFFSET, vocab, [8, max_len], digits);
    let mask = make_padding_mask(&src);
    let mut x = deep.embed.forward(&src, false);
    println!("layer  std of the residual stream x");
    println!("embed  {:.3}", x.std(true).double_value(&[]));
    for (i, layer) in deep.layers.iter().enumerate() {
        x = layer.forward(&x, &mask, false).0;
        println!("{:5}  {:.3}", i + 1, x.std(true).double_value(&[]));
    }
    println!(
        "ln_final {:.3}  <- what the decoder's cross-attention reads",
        x.apply(&deep.ln_final).std(true).double_value(&[])
    );
    // ANCHOR_END: residual_growth
    Ok(())
}
