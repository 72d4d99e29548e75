//! Chapter 06: the three masks drawn as grids, and the whole model counted.
//! cargo run --release --bin 06_transformer
use tch::{nn, Device, Tensor};
use transformer_course::transformer::{format_mask, make_causal_mask, make_padding_mask, parameter_count, Transformer, TransformerConfig};

fn main() -> anyhow::Result<()> {
    tch::manual_seed(0);
    // 7 3 0 9 5 <eos> and <bos> 5 9 0 3 7, both padded to 8 (digits are stored as id = digit + 3).
    let src = Tensor::from_slice(&[10i64, 6, 3, 12, 8, 2, 0, 0]).view([1, 8]);
    let tgt_in = Tensor::from_slice(&[1i64, 8, 12, 3, 6, 10, 0, 0]).view([1, 8]);

    // ANCHOR: grids
    println!("■ = masked (true), · = visible\n");
    println!("encoder self-attention and cross-attention: padding mask of src {:?}", make_padding_mask(&src).size());
    print!("{}", format_mask(&make_padding_mask(&src).view([1, 8])));
    println!("\ndecoder self-attention, part 1: causal mask {:?}", make_causal_mask(8, Device::Cpu).size());
    print!("{}", format_mask(&make_causal_mask(8, Device::Cpu).view([8, 8])));
    println!("\ndecoder self-attention, part 2: padding mask of tgt_in {:?}", make_padding_mask(&tgt_in).size());
    print!("{}", format_mask(&make_padding_mask(&tgt_in).view([1, 8])));
    let combined = make_causal_mask(8, Device::Cpu).logical_or(&make_padding_mask(&tgt_in));
    println!("\ndecoder self-attention: causal | padding {:?}", combined.size());
    print!("{}", format_mask(&combined.view([8, 8])));
    // ANCHOR_END: grids

    // ANCHOR: count
    let vs = nn::VarStore::new(Device::Cpu);
    let config = TransformerConfig::reverse_task();
    let model = Transformer::new(vs.root(), config)?;
    println!("\n{config:?}");
    let count = |prefix: &str| -> i64 {
        vs.variables().iter().filter(|(n, _)| n.starts_with(prefix)).map(|(_, t)| t.numel() as i64).sum()
    };
    println!("encoder   {:>9}", count("encoder."));
    println!("decoder   {:>9}", count("decoder."));
    println!("out_proj  {:>9}", count("out_proj."));
    println!("total     {:>9}", parameter_count(&vs));
    // ANCHOR_END: count

    let logits = model.forward(&src, &tgt_in, false);
    println!("\nforward: src {:?} + tgt_in {:?} -> logits {:?}", src.size(), tgt_in.size(), logits.size());

    // ANCHOR: invalid
    let bad = TransformerConfig { d_model: 130, ..config };
    match Transformer::new(nn::VarStore::new(Device::Cpu).root(), bad) {
        Ok(_) => println!("d_model=130, h=4 was accepted (unexpected)"),
        Err(e) => println!("d_model=130, h=4 -> error: {e}"),
    }
    // ANCHOR_END: invalid
    Ok(())
}
