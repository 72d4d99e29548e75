//! Chapter 10: greedy decoding with the trained checkpoint.
//! cargo run --release --bin 10_greedy_decode -- 7 3 0 9 5
//! cargo run --release --bin 10_greedy_decode            (demos + validation exact match)
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use transformer_course::data::{digits_of, make_dataset, parse_digits, row, source_tensor, tokens_to_words, SEQ_LEN};
use transformer_course::decode::{exact_match, greedy_decode};
use transformer_course::train::{load_checkpoint, reverse_config, select_device, DeviceChoice, DEFAULT_CHECKPOINT};

#[derive(Parser)]
#[command(about = "Reverse digits with the trained Transformer, one token at a time")]
struct Args {
    /// Digits to reverse (1 to 12 of them), e.g. `7 3 0 9 5` or `73095`.
    /// Without any, runs a few demos and the validation exact match.
    digits: Vec<String>,
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    checkpoint: PathBuf,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    device: DeviceChoice,
    /// Print the decoder's input at every step.
    #[arg(long)]
    trace: bool,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    // Check the input before touching the checkpoint: a typo deserves the typo's message.
    let digits = if args.digits.is_empty() { None } else { Some(parse_digits(&args.digits)?) };
    let device = select_device(args.device)?;
    let (_vs, model) = load_checkpoint(&args.checkpoint, &reverse_config(Default::default()), device)?;

    if let Some(digits) = digits {
        let src = source_tensor(&digits, device);
        if args.trace {
            // ANCHOR: trace
            // The decode loop by hand: each step feeds everything produced so far.
            let out = greedy_decode(&model, &src, SEQ_LEN);
            let tokens = row(&out, 0);
            for t in 1..tokens.len() {
                println!("step {t:2}: decoder input {:<40} -> next {}", tokens_to_words(&tokens[..t]), tokens_to_words(&tokens[t..t + 1]));
            }
            // ANCHOR_END: trace
        }
        let out = greedy_decode(&model, &src, SEQ_LEN);
        println!("input: {digits:?} -> output: {:?}", digits_of(&row(&out, 0)));
        return Ok(());
    }

    // ANCHOR: demos
    let demos: [&[i64]; 5] = [&[7, 3, 0, 9, 5], &[1, 2, 3], &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2], &[4, 4, 4, 4, 0, 4], &[5, 0, 5]];
    // All demos in one batch: rows finish at different steps and are padded after EOS.
    let batch = tch::Tensor::cat(&demos.iter().map(|d| source_tensor(d, device)).collect::<Vec<_>>(), 0);
    let out = greedy_decode(&model, &batch, SEQ_LEN);
    println!("batched greedy decoding of {} inputs, {} decoder steps:", demos.len(), out.size()[1] - 1);
    for (i, d) in demos.iter().enumerate() {
        let tokens = row(&out, i as i64);
        let ok = digits_of(&tokens) == d.iter().rev().copied().collect::<Vec<_>>();
        println!("  {:<38} -> {:<70} {}", format!("{d:?}"), tokens_to_words(&tokens), if ok { "ok" } else { "WRONG" });
    }
    // ANCHOR_END: demos

    let val = make_dataset(1000, 1); // the validation set of 09_train_reverse --seed 0
    let t = Instant::now();
    let em = exact_match(&model, &val.src, &val.tgt, 500);
    println!("\nvalidation exact match (1000 samples, seed 1): {em:.3}  in {:.2}s", t.elapsed().as_secs_f64());
    Ok(())
}
