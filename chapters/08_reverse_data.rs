//! Chapter 08: the reversal data set, one sample in memory and in words, and
//! its statistics. cargo run --release --bin 08_reverse_data
use clap::Parser;
use tch::{Kind, Tensor};
use transformer_course::data::{digit_sequences, make_dataset, row};
use transformer_course::train::teacher_forcing;
use transformer_course::vocab::{
    tokens_to_words, EOS_ID, MAX_LEN, MIN_LEN, PAD_ID, SEQ_LEN, VOCAB,
};
use workbench::cli::run_main;

/// Chapter 08: the reversal data set, in memory and in words.
#[derive(Parser)]
struct Args {}

fn main() {
    Args::parse();
    run_main(run)
}

fn run() -> anyhow::Result<()> {
    let one = transformer_course::data::encode_pair(&[7, 3, 0, 9, 5]);
    println!("vocab {VOCAB}: PAD=0 BOS=1 EOS=2, digit d -> d+3; rows are {SEQ_LEN} long\n");
    println!("src : {:?}", one.0);
    println!("      {}", tokens_to_words(&one.0));
    println!("tgt : {:?}", one.1);
    println!("      {}", tokens_to_words(&one.1));

    // ANCHOR: shift
    let tgt = Tensor::from_slice(&one.1).view([1, SEQ_LEN as i64]);
    let (tgt_in, tgt_out) = teacher_forcing(&tgt);
    println!("\nteacher forcing shifts the target by one:");
    println!(
        "tgt_in  (decoder input) : {}",
        tokens_to_words(&row(&tgt_in, 0))
    );
    println!(
        "tgt_out (labels)        : {}",
        tokens_to_words(&row(&tgt_out, 0))
    );
    // ANCHOR_END: shift

    // ANCHOR: stats
    let train = make_dataset(20_000, 0);
    let val = make_dataset(1_000, 1);
    println!(
        "\ntrain: src {:?} tgt {:?} (seed 0)   val: src {:?} (seed 1)",
        train.src.size(),
        train.tgt.size(),
        val.src.size()
    );
    // A sample's length is the position of its EOS in the source row.
    let lengths = train
        .src
        .eq(EOS_ID)
        .to_kind(tch::Kind::Int64)
        .argmax(1, false);
    println!("\nlength  count   share");
    for len in MIN_LEN..=MAX_LEN {
        let count = lengths
            .eq(len as i64)
            .sum(tch::Kind::Int64)
            .int64_value(&[]);
        println!(
            "{len:6} {count:6}  {:5.1}%  {}",
            100.0 * count as f64 / 20_000.0,
            "#".repeat((count / 100) as usize)
        );
    }
    // ANCHOR_END: stats
    // ANCHOR: pad_share
    let share = |t: &Tensor| {
        let pad = t.eq(PAD_ID).to_kind(Kind::Float);
        100.0 * pad.mean(Kind::Float).double_value(&[])
    };
    let (_, labels) = teacher_forcing(&train.tgt);
    println!(
        "\nshare of PAD tokens in the source rows: {:.1}%",
        share(&train.src)
    );
    println!(
        "share of PAD labels (tgt_out):          {:.1}%",
        share(&labels)
    );
    println!(
        "first validation sample: {}",
        tokens_to_words(&row(&val.src, 0))
    );
    // ANCHOR_END: pad_share

    // Chapter 10's test set skips every sequence of these two sets, so at short
    // lengths, where they hold most of what there is, it can draw few.
    let mut seen = digit_sequences(&train);
    seen.extend(digit_sequences(&val));
    println!(
        "\nsequences left for a test set that skips those in train or val:"
    );
    println!(
        "length        possible  in train or val            left  thrown away"
    );
    for len in MIN_LEN..=MAX_LEN {
        let possible = 10u64.pow(len as u32);
        let taken = seen.iter().filter(|s| s.len() == len).count() as u64;
        println!(
            "{len:6} {possible:>15} {taken:>16} {:>15}  {:10.2}%",
            possible - taken,
            100.0 * taken as f64 / possible as f64
        );
    }
    Ok(())
}
