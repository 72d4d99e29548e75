//! Chapter 04: Pre-Norm layers and why the stack ends with one more LayerNorm.
//! cargo run --release --bin 04_encoder
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::Init;
use transformer_course::encoder::Encoder;
use transformer_course::transformer::make_padding_mask;

fn main() -> anyhow::Result<()> {
    tch::manual_seed(0);
    let (vocab, d, h, dff, max_len) = (13, 128, 4, 512, 14);
    let src = Tensor::from_slice(&[10i64, 6, 3, 12, 8, 2, 0, 0, 0, 0, 0, 0, 0, 0]).view([1, 14]);
    let mask = make_padding_mask(&src);

    let vs = nn::VarStore::new(Device::Cpu);
    let enc = Encoder::new(vs.root(), vocab, d, h, dff, 2, max_len, 0.0, Init::Paper)?;
    let memory = enc.forward(&src, &mask, false);
    println!("src {:?} -> memory {:?}", src.size(), memory.size());
    let params: i64 = vs.trainable_variables().iter().map(|t| t.numel() as i64).sum();
    println!("encoder parameters (2 layers): {params}\n");

    // ANCHOR: residual_growth
    // A deeper stack makes the point: in Pre-Norm the residual stream x is only ever
    // added to, never normalised, so its scale drifts upward layer after layer.
    let vs = nn::VarStore::new(Device::Cpu);
    let deep = Encoder::new(vs.root(), vocab, d, h, dff, 12, max_len, 0.0, Init::Paper)?;
    let src = Tensor::randint_low(3, vocab, [8, max_len], (Kind::Int64, Device::Cpu));
    let mask = make_padding_mask(&src);
    let mut x = deep.embed.forward(&src, false);
    println!("layer  std of the residual stream x");
    println!("embed  {:.3}", x.std(true).double_value(&[]));
    for (i, layer) in deep.layers.iter().enumerate() {
        x = layer.forward(&x, &mask, false).0;
        println!("{:5}  {:.3}", i + 1, x.std(true).double_value(&[]));
    }
    println!("ln_final {:.3}  <- what the decoder's cross-attention reads", x.apply(&deep.ln_final).std(true).double_value(&[]));
    // ANCHOR_END: residual_growth
    Ok(())
}
