//! Chapter 03: the feed-forward network works on each position on its own.
//! cargo run --release --bin 03_feed_forward
use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::feed_forward::FeedForward;
use transformer_course::layers::parameter_count;
use workbench::cli::run_main;

/// Chapter 03: the position-wise feed-forward network and GELU.
#[derive(Parser)]
struct Args {}

fn main() {
    Args::parse();
    run_main(run)
}

fn run() -> anyhow::Result<()> {
    tch::manual_seed(0);
    let cfg = TransformerConfig::reverse_task();
    let (b, l, d, d_ff) = (64, 14, cfg.d_model, cfg.d_ff);
    let vs = nn::VarStore::new(Device::Cpu);
    let ffn = FeedForward::new(vs.root(), &cfg);
    let x = Tensor::randn([b, l, d], (Kind::Float, Device::Cpu));

    println!("d_model={d} d_ff={d_ff} (4·d)");
    println!("x          {:?}", x.size());
    println!("lin1(x)    {:?}", x.apply(&ffn.lin1).size());
    let y = ffn.forward(&x);
    println!("ffn(x)     {:?}", y.size());
    let params = parameter_count(&vs);
    println!("parameters {d}·{d_ff} + {d_ff} + {d_ff}·{d} + {d} = {params}\n");

    // ANCHOR: position_wise
    // Position-wise: running the FFN on one position alone gives that
    // position's row of the batched output. Nothing flows between positions
    // here; only attention does that.
    let one = ffn.forward(&x.narrow(1, 5, 1)); // [B, 1, d]
    let diff = (one - y.narrow(1, 5, 1)).abs().max().double_value(&[]);
    println!("max |ffn(x[:, 5:6]) - ffn(x)[:, 5:6]| = {diff:.2e}");
    // ANCHOR_END: position_wise

    // ANCHOR: gelu
    println!("\nGELU lets a little negative signal through, smoothly:");
    println!("    z    ReLU(z)  GELU(z)");
    for z in [-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0] {
        let t = Tensor::from(z);
        println!(
            "{z:+5.1}   {:+.4}  {:+.4}",
            t.relu().double_value(&[]),
            t.gelu("none").double_value(&[])
        );
    }
    // ANCHOR_END: gelu
    Ok(())
}
