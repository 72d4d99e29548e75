//! Chapter 05: the decoder layer's three sublayers and the cross-attention it
//! collects. cargo run --release --bin 05_decoder
use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::decoder::Decoder;
use transformer_course::layers::parameter_count;
use transformer_course::transformer::{make_padding_mask, make_target_mask};
use transformer_course::vocab::NUM_OFFSET;
use workbench::cli::run_main;

/// Chapter 05: the decoder layer's three sublayers and its cross-attention.
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
    let (vocab, d) = (cfg.tgt_vocab, cfg.d_model);
    let (b, ls, lt) = (64, 14, 13);
    let vs = nn::VarStore::new(Device::Cpu);
    let dec = Decoder::new(vs.root(), &cfg)?;

    // ANCHOR: shapes
    // Random numbers stand in for the encoder's memory.
    let memory = Tensor::randn([b, ls, d], (Kind::Float, Device::Cpu));
    let ids = (Kind::Int64, Device::Cpu);
    let src = Tensor::randint_low(NUM_OFFSET, vocab, [b, ls], ids); // digits only
    let tgt_in = Tensor::randint_low(NUM_OFFSET, vocab, [b, lt], ids);
    let self_mask = make_target_mask(&tgt_in); // causal | padding
    let cross_mask = make_padding_mask(&src);
    println!("tgt_in     {:?}", tgt_in.size());
    println!("memory     {:?}", memory.size());
    println!(
        "self_mask  {:?}  (causal [1, 1, Lt, Lt] | padding [B, 1, 1, Lt])",
        self_mask.size()
    );
    println!(
        "cross_mask {:?}  (source padding, shared with the encoder)",
        cross_mask.size()
    );
    let (out, weights) = dec.forward_with_weights(
        &tgt_in,
        &memory,
        &self_mask,
        &cross_mask,
        false,
    );
    println!("output     {:?}", out.size());
    for (i, w) in weights.iter().enumerate() {
        println!(
            "layer {i}: self-attention {:?}  cross-attention {:?}",
            w.self_attn.size(),
            w.cross_attn.size()
        );
    }
    // ANCHOR_END: shapes

    // The self-attention weights above the diagonal are exactly zero: the
    // causal mask at work. The cross-attention has no such structure: every
    // target position may read every real source position.
    let sw = weights[0].self_attn.get(0).get(0); // [Lt, Lt]
    let future = sw.triu(1).abs().max().double_value(&[]);
    println!("\nlayer 0, head 0: largest self-attention weight on a future position = {future:.1e}");
    let cw = weights[0].cross_attn.get(0).get(0);
    let row: Vec<String> = (0..ls)
        .map(|j| format!("{:.2}", cw.double_value(&[0, j])))
        .collect();
    println!("layer 0, head 0: cross-attention row 0 =");
    println!("  {}", row.join(" "));
    let params = parameter_count(&vs);
    println!("\ndecoder parameters (2 layers): {params}");
    Ok(())
}
