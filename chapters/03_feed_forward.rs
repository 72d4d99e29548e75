//! Chapter 03: the feed-forward network works on each position on its own.
//! cargo run --release --bin 03_feed_forward
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::Init;
use transformer_course::feed_forward::FeedForward;

fn main() {
    tch::manual_seed(0);
    let (b, l, d, dff) = (64, 14, 128, 512);
    let vs = nn::VarStore::new(Device::Cpu);
    let ffn = FeedForward::new(vs.root(), d, dff, 0.0, Init::Paper);
    let x = Tensor::randn([b, l, d], (Kind::Float, Device::Cpu));

    println!("d_model={d} dff={dff} (4·d)");
    println!("x          {:?}", x.size());
    println!("lin1(x)    {:?}", x.apply(&ffn.lin1).size());
    let y = ffn.forward(&x, false);
    println!("ffn(x)     {:?}", y.size());
    let params: i64 = vs.trainable_variables().iter().map(|t| t.numel() as i64).sum();
    println!("parameters {d}·{dff} + {dff} + {dff}·{d} + {d} = {params}\n");

    // ANCHOR: position_wise
    // Position-wise: running the FFN on one position alone gives that position's row of
    // the batched output. Nothing flows between positions here; only attention does that.
    let one = ffn.forward(&x.narrow(1, 5, 1), false); // [B, 1, d]
    let diff = (one - y.narrow(1, 5, 1)).abs().max().double_value(&[]);
    println!("max |ffn(x[:, 5:6]) - ffn(x)[:, 5:6]| = {diff:.2e}");
    // ANCHOR_END: position_wise

    // ANCHOR: gelu
    println!("\n    z    ReLU(z)  GELU(z)   GELU lets a little negative signal through, smoothly");
    for z in [-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0] {
        let t = Tensor::from(z);
        println!("{z:+5.1}   {:+.4}  {:+.4}", t.relu().double_value(&[]), t.gelu("none").double_value(&[]));
    }
    // ANCHOR_END: gelu
}
