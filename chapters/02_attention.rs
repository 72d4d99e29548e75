//! Chapter 02: attention by hand on three tokens, then multi-head attention shape
//! by shape for the course's B=64, L=14, d=128, h=4.
//! cargo run --release --bin 02_attention
use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::{scaled_dot_product, MultiHeadAttention};
use transformer_course::config::TransformerConfig;
use transformer_course::layers::{parameter_count, xavier_uniform_bound};
use transformer_course::transformer::make_causal_mask;
use workbench::cli::run_main;

/// Chapter 02: multi-head attention shape by shape, the `view` after
/// `transpose` error, and masking.
#[derive(Parser)]
struct Args {}

fn main() {
    Args::parse();
    run_main(run)
}

/// Prints a [rows, cols] tensor with two decimals, one row per line.
fn show_matrix(name: &str, t: &Tensor) {
    let t = t.reshape([-1, *t.size().last().unwrap()]);
    for i in 0..t.size()[0] {
        let row: Vec<f64> =
            Vec::try_from(&t.get(i).to_kind(Kind::Double)).unwrap();
        let cells: Vec<String> =
            row.iter().map(|v| format!("{v:6.2}")).collect();
        let label = if i == 0 { name } else { "" };
        println!("  {label:<14} [{} ]", cells.join(""));
    }
}

// ANCHOR: worked_example
/// Attention on three tokens with d_k = 2, one head, numbers small enough to
/// follow by hand.
fn worked_example() {
    let m = |rows: &[[f32; 2]; 3]| {
        Tensor::from_slice(rows.as_flattened()).view([1, 1, 3, 2])
    };
    let q = m(&[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); // what each token looks for
    let k = m(&[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); // what each token offers
    let v = m(&[[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]]); // what each token passes on
    println!("A worked example: 3 tokens, d_k = 2, one head");
    show_matrix("Q", &q);
    show_matrix("K", &k);
    show_matrix("V", &v);
    let scores = q.matmul(&k.transpose(-2, -1)); // [1, 1, 3, 3]
    show_matrix("Q Kᵀ", &scores);
    println!("  scale: divide by √d_k = {:.3}", 2f64.sqrt());
    show_matrix("Q Kᵀ / √d_k", &(&scores / 2f64.sqrt()));
    let (out, weights) = scaled_dot_product(&q, &k, &v, None, 0.0, false);
    show_matrix("softmax (rows)", &weights);
    show_matrix("weights · V", &out);
    println!("\nThe same with the causal mask (token i sees tokens 0..=i):");
    let causal = make_causal_mask(3, Device::Cpu);
    let (out, weights) =
        scaled_dot_product(&q, &k, &v, Some(&causal), 0.0, false);
    show_matrix("softmax (rows)", &weights);
    show_matrix("weights · V", &out);
    println!();
}
// ANCHOR_END: worked_example

fn run() -> anyhow::Result<()> {
    worked_example();
    tch::manual_seed(0);
    let cfg = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let (b, l, d, h) = (64, 14, cfg.d_model, cfg.num_heads);
    let vs = nn::VarStore::new(Device::Cpu);
    let mha = MultiHeadAttention::new(vs.root(), &cfg)?;
    let x = Tensor::randn([b, l, d], (Kind::Float, Device::Cpu));

    // ANCHOR: shapes
    println!("B={b} L={l} d_model={d} h={h} d_k={}\n", mha.d_k);
    let show = |what: &str, t: &Tensor| println!("{what:40} {:?}", t.size());
    show("x", &x);
    let q_lin = x.apply(&mha.W_q);
    show("W_q(x)", &q_lin);
    show("view(B, L, h, d_k)", &q_lin.view([b, l, h, mha.d_k]));
    let q = mha.split(&q_lin);
    show("transpose(1, 2) -> Q", &q);
    let k = mha.split(&x.apply(&mha.W_k));
    let scores = q.matmul(&k.transpose(-2, -1)) / (mha.d_k as f64).sqrt();
    show("scores = Q Kᵀ / √d_k", &scores);
    let (out, weights) = mha.forward(&x, &x, &x, None, false);
    show("weights = softmax(scores)", &weights);
    let v = mha.split(&x.apply(&mha.W_v));
    show("weights @ V", &weights.matmul(&v));
    show(
        "merge: transpose(1, 2).reshape(B, L, d)",
        &mha.merge(&weights.matmul(&v)),
    );
    show("W_o(...) -> output", &out);
    // ANCHOR_END: shapes

    let row_sums = weights.sum_dim_intlist(-1, false, Kind::Float);
    println!(
        "\nevery attention row sums to 1: min {:.6}  max {:.6}",
        row_sums.min().double_value(&[]),
        row_sums.max().double_value(&[])
    );

    // ANCHOR: view_error
    // [B, L, h, d_k], no longer contiguous in memory
    let merged_wrong = weights.matmul(&v).transpose(1, 2);
    println!(
        "\nafter transpose: is_contiguous = {}",
        merged_wrong.is_contiguous()
    );
    match merged_wrong.f_view([b, l, d]) {
        Ok(_) => println!("view succeeded (unexpected)"),
        Err(e) => {
            println!("f_view(B, L, d) fails:");
            // libtorch's message, without its C++ stack trace, wrapped.
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            let mut line = String::from(" ");
            for word in first.split_whitespace() {
                if line.len() + word.len() > 76 {
                    println!("{line}");
                    line = String::from(" ");
                }
                line = format!("{line} {word}");
            }
            println!("{line}");
        }
    }
    let a = merged_wrong.reshape([b, l, d]);
    let c = merged_wrong.contiguous().view([b, l, d]);
    println!("reshape == contiguous().view: {}", a.equal(&c));
    // ANCHOR_END: view_error

    // ANCHOR: masking
    // Mask the last 4 keys of every sequence (true = masked) and look at one row.
    let key_mask = Tensor::arange(l, (Kind::Int64, Device::Cpu))
        .ge(l - 4)
        .view([1, 1, 1, l]);
    let (_, w) = mha.forward(&x, &x, &x, Some(&key_mask), false);
    let row: Vec<f64> = (0..l).map(|j| w.double_value(&[0, 0, 0, j])).collect();
    println!("\nrow 0 of head 0 with the last 4 keys masked:");
    println!(
        "  {}",
        row.iter()
            .map(|p| format!("{p:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    // ANCHOR_END: masking
    println!(
        "\nXavier bound for a {d}×{d} weight: a = √(6/(d+d)) = {:.4}\n\
         (PyTorch's default bound 1/√d = {:.4})",
        xavier_uniform_bound(d, d),
        1.0 / (d as f64).sqrt()
    );
    println!("parameters: 4 × ({d}·{d} + {d}) = {}", parameter_count(&vs));
    Ok(())
}
