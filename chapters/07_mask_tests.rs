//! Chapter 07: test the masks before training: the correct mask passes both checks,
//! each classic mistake fails the causality check.
//! cargo run --release --bin 07_mask_tests
use clap::Parser;
use tch::{nn, Device, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::mask_checks::{
    causality_check, source_padding_check, target_padding_check, CAUSAL_MASKS,
};
use transformer_course::transformer::Transformer;
use workbench::cli::run_main;

/// Chapter 07: causality and padding invariance, and the broken masks they catch.
#[derive(Parser)]
struct Args {}

const ATOL: f64 = 1e-5;

fn main() {
    Args::parse();
    run_main(run)
}

fn run() -> anyhow::Result<()> {
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    // dropout 0 and train=false: two forward passes must be comparable bit for bit.
    let model = Transformer::new(
        vs.root(),
        TransformerConfig {
            dropout: 0.0,
            ..TransformerConfig::reverse_task()
        },
    )?;
    let src = Tensor::from_slice(&[3i64, 4, 5, 2, 0, 0]).view([1, 6]);
    let tgt = Tensor::from_slice(&[1i64, 5, 4, 3, 2]).view([1, 5]);

    // ANCHOR: run_checks
    println!(
        "1) causality: change the target from position k=3 on (to token 12),"
    );
    println!("   compare the logits\n");
    println!(
        "   {:36} {:>10} {:>10}  verdict",
        "causal mask", "max|Δ| < k", "max|Δ| ≥ k"
    );
    for (name, mask_fn) in CAUSAL_MASKS {
        let r = causality_check(&model, &src, &tgt, 3, 12, mask_fn);
        let verdict = if r.holds(ATOL) {
            "PASS"
        } else {
            "FAIL: sees the future"
        };
        println!(
            "   {name:36} {:10.2e} {:10.2e}  {verdict}",
            r.before_k, r.from_k
        );
    }

    println!("\n2) padding invariance: append PAD tokens, compare logits\n");
    for extra in [1, 3, 8] {
        let d = source_padding_check(&model, &src, &tgt, extra);
        println!(
            "   source + {extra} PAD: max|Δ| = {d:.2e}  {}",
            if d <= ATOL { "PASS" } else { "FAIL" }
        );
    }
    for extra in [1, 3] {
        let d = target_padding_check(&model, &src, &tgt, extra);
        println!(
            "   target + {extra} PAD: max|Δ| = {d:.2e}  {}",
            if d <= ATOL { "PASS" } else { "FAIL" }
        );
    }
    // ANCHOR_END: run_checks
    Ok(())
}
