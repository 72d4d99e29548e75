//! Chapter 01: why the token embedding is multiplied by √d, and why its init matters.
//! cargo run --release --bin 01_embedding
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::{sinusoidal_position_encoding, Init, TokenAndPosition, PAD_ID};

fn main() {
    tch::manual_seed(0);
    let (vocab, d_model, max_len) = (13, 128, 14);
    println!("vocab={vocab} d_model={d_model} max_len={max_len}   √d_model = {:.2}\n", (d_model as f64).sqrt());

    // ANCHOR: signals
    let pe = sinusoidal_position_encoding(max_len, d_model);
    println!("position signal  : min {:+.3}  max {:+.3}  std {:.3}", pe.min().double_value(&[]), pe.max().double_value(&[]), pe.std(true).double_value(&[]));

    let ids = Tensor::arange_start(1, vocab, (Kind::Int64, Device::Cpu)); // every token but PAD
    for init in [Init::Paper, Init::FrameworkDefault, Init::TchDefault] {
        let vs = nn::VarStore::new(Device::Cpu);
        let layer = TokenAndPosition::new(vs.root(), vocab, d_model, max_len, 0.0, init);
        let token_signal = ids.apply(&layer.emb) * (d_model as f64).sqrt(); // [12, d]
        let pad_row_norm = layer.emb.ws.get(PAD_ID).norm().double_value(&[]);
        println!(
            "token signal ({:17}) : std {:6.3}   token/position ratio {:5.1}   ‖PAD row‖ = {:.3}",
            init.name(),
            token_signal.std(true).double_value(&[]),
            token_signal.std(true).double_value(&[]) / pe.std(true).double_value(&[]),
            pad_row_norm,
        );
    }
    // ANCHOR_END: signals

    println!("\nThe first rows and columns of the table (even columns sin, odd columns cos):");
    println!("pos   dim0    dim1    dim2    dim3    dim4    dim5  …  dim126  dim127");
    for pos in 0..5 {
        let row = pe.get(pos);
        let v = |i: i64| row.double_value(&[i]);
        println!(
            "{pos:3} {:+.3}  {:+.3}  {:+.3}  {:+.3}  {:+.3}  {:+.3}  …  {:+.3}  {:+.3}",
            v(0), v(1), v(2), v(3), v(4), v(5), v(126), v(127)
        );
    }
    // Low dimensions turn fast, high ones barely move: nearby positions differ in the
    // first columns, distant ones in the later ones.
    let near = (pe.get(1) - pe.get(0)).norm().double_value(&[]);
    let far = (pe.get(13) - pe.get(0)).norm().double_value(&[]);
    println!("\ndistance between position rows: ‖pe[1]-pe[0]‖ = {near:.3}, ‖pe[13]-pe[0]‖ = {far:.3}");
}
