//! Chapter 05: the decoder layer's three sublayers and the cross-attention it collects.
//! cargo run --release --bin 05_decoder
use tch::{nn, Device, Kind, Tensor};
use transformer_course::decoder::Decoder;
use transformer_course::embedding::Init;
use transformer_course::transformer::{make_causal_mask, make_padding_mask};

fn main() -> anyhow::Result<()> {
    tch::manual_seed(0);
    let (vocab, d, h, dff, layers, max_len) = (13, 128, 4, 512, 2, 14);
    let (b, ls, lt) = (64, 14, 13);
    let vs = nn::VarStore::new(Device::Cpu);
    let dec = Decoder::new(vs.root(), vocab, d, h, dff, layers, max_len, 0.0, Init::Paper)?;

    // ANCHOR: shapes
    let memory = Tensor::randn([b, ls, d], (Kind::Float, Device::Cpu)); // stands in for the encoder
    let src = Tensor::randint_low(3, vocab, [b, ls], (Kind::Int64, Device::Cpu));
    let tgt_in = Tensor::randint_low(3, vocab, [b, lt], (Kind::Int64, Device::Cpu));
    let self_mask = make_causal_mask(lt, Device::Cpu).logical_or(&make_padding_mask(&tgt_in));
    let cross_mask = make_padding_mask(&src);
    println!("tgt_in     {:?}", tgt_in.size());
    println!("memory     {:?}", memory.size());
    println!("self_mask  {:?}  (causal [1, 1, Lt, Lt] | padding [B, 1, 1, Lt])", self_mask.size());
    println!("cross_mask {:?}  (source padding, shared with the encoder)", cross_mask.size());
    let (out, weights) = dec.forward_with_weights(&tgt_in, &memory, &self_mask, &cross_mask, false);
    println!("output     {:?}", out.size());
    for (i, w) in weights.iter().enumerate() {
        println!("layer {i}: self-attention {:?}  cross-attention {:?}", w.self_attn.size(), w.cross_attn.size());
    }
    // ANCHOR_END: shapes

    // The self-attention weights above the diagonal are exactly zero: the causal mask
    // at work. The cross-attention has no such structure: every target position may
    // read every real source position.
    let sw = weights[0].self_attn.get(0).get(0); // [Lt, Lt]
    let future = sw.triu(1).abs().max().double_value(&[]);
    println!("\nlayer 0, head 0: largest self-attention weight on a future position = {future:.1e}");
    let cw = weights[0].cross_attn.get(0).get(0);
    println!("layer 0, head 0: cross-attention row 0 = {}", (0..ls).map(|j| format!("{:.2}", cw.double_value(&[0, j]))).collect::<Vec<_>>().join(" "));
    let params: i64 = vs.trainable_variables().iter().map(|t| t.numel() as i64).sum();
    println!("\ndecoder parameters (2 layers): {params}");
    Ok(())
}
