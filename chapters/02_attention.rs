//! Chapter 02: multi-head attention, shape by shape, for the course's B=64, L=14, d=128, h=4.
//! cargo run --release --bin 02_attention
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::{xavier_uniform_bound, MultiHeadAttention};
use transformer_course::embedding::Init;

fn main() -> anyhow::Result<()> {
    tch::manual_seed(0);
    let (b, l, d, h) = (64, 14, 128, 4);
    let vs = nn::VarStore::new(Device::Cpu);
    let mha = MultiHeadAttention::new(vs.root(), d, h, 0.0, Init::Paper)?;
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
    show("merge: transpose(1, 2).reshape(B, L, d)", &mha.merge(&weights.matmul(&v)));
    show("W_o(...) -> output", &out);
    // ANCHOR_END: shapes

    let row_sums = weights.sum_dim_intlist(-1, false, Kind::Float);
    println!(
        "\nevery attention row sums to 1: min {:.6}  max {:.6}",
        row_sums.min().double_value(&[]),
        row_sums.max().double_value(&[])
    );

    // ANCHOR: view_error
    let merged_wrong = weights.matmul(&v).transpose(1, 2); // [B, L, h, d_k], not contiguous
    println!("\nafter transpose: is_contiguous = {}", merged_wrong.is_contiguous());
    match merged_wrong.f_view([b, l, d]) {
        Ok(_) => println!("view succeeded (unexpected)"),
        Err(e) => println!("f_view(B, L, d) fails:\n  {}", e.to_string().lines().next().unwrap_or("")),
    }
    let a = merged_wrong.reshape([b, l, d]);
    let c = merged_wrong.contiguous().view([b, l, d]);
    println!("reshape == contiguous().view: {}", a.equal(&c));
    // ANCHOR_END: view_error

    // ANCHOR: masking
    // Mask the last 4 keys of every sequence (true = masked) and look at one row.
    let key_mask = Tensor::arange(l, (Kind::Int64, Device::Cpu)).ge(l - 4).view([1, 1, 1, l]);
    let (_, w) = mha.forward(&x, &x, &x, Some(&key_mask), false);
    let row: Vec<f64> = (0..l).map(|j| w.double_value(&[0, 0, 0, j])).collect();
    println!("\nrow 0 of head 0 with the last 4 keys masked:");
    println!("  {}", row.iter().map(|p| format!("{p:.3}")).collect::<Vec<_>>().join(" "));
    // ANCHOR_END: masking
    println!(
        "\nXavier bound for a {d}×{d} weight: a = √(6/(d+d)) = {:.4}  (PyTorch's default bound 1/√d = {:.4})",
        xavier_uniform_bound(d, d),
        1.0 / (d as f64).sqrt()
    );
    println!("parameters: 4 × ({d}·{d} + {d}) = {}", vs.trainable_variables().iter().map(|t| t.numel()).sum::<usize>());
    Ok(())
}
