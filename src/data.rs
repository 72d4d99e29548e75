//! Chapter 08 — the data: reverse a sequence of digits.
//!
//! Thirteen tokens are all it takes (`crate::vocab`): PAD 0, BOS 1, EOS 2 and
//! the digits 0–9 stored as ids 3–12. Every sample is drawn from a ChaCha
//! stream seeded by the caller, so a seed gives the same data on every machine
//! and every platform.
use std::collections::HashSet;

use anyhow::{bail, ensure, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

use crate::vocab::{
    digit_token, digits_of, BOS_ID, EOS_ID, MAX_LEN, MIN_LEN, PAD_ID, SEQ_LEN,
};

/// A reversal data set: row i of `src` is `d₁ … dₙ EOS PAD…`, row i of `tgt` is
/// `BOS dₙ … d₁ EOS PAD…`. Both are [N, SEQ_LEN] int64 on the CPU.
#[derive(Debug)]
pub struct ReverseDataset {
    pub src: Tensor,
    pub tgt: Tensor,
}

impl ReverseDataset {
    pub fn len(&self) -> usize {
        self.src.size()[0] as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first `n` samples (all of them if there are fewer), sharing memory.
    pub fn first(&self, n: usize) -> ReverseDataset {
        let n = n.min(self.len()) as i64;
        ReverseDataset {
            src: self.src.narrow(0, 0, n),
            tgt: self.tgt.narrow(0, 0, n),
        }
    }
}

// ANCHOR: encode_pair
/// Lays out one sample: the source row and the target row for `digits`.
pub fn encode_pair(digits: &[i64]) -> ([i64; SEQ_LEN], [i64; SEQ_LEN]) {
    let n = digits.len();
    let (mut src, mut tgt) = ([PAD_ID; SEQ_LEN], [PAD_ID; SEQ_LEN]);
    for (i, d) in digits.iter().enumerate() {
        src[i] = digit_token(*d);
        tgt[n - i] = digit_token(*d); // tgt[1..=n] is src[..n] backwards
    }
    src[n] = EOS_ID;
    tgt[0] = BOS_ID;
    tgt[n + 1] = EOS_ID;
    (src, tgt)
}
// ANCHOR_END: encode_pair

// ANCHOR: make_dataset
/// `n` samples with lengths uniform in MIN_LEN..=MAX_LEN and digits uniform in
/// 0..=9.
pub fn make_dataset(n: usize, seed: u64) -> ReverseDataset {
    make_dataset_excluding(n, seed, &HashSet::new())
}

/// `make_dataset` that skips every digit sequence in `exclude`: chapter 10's test
/// set, disjoint from the training and validation sets (see `digit_sequences`).
pub fn make_dataset_excluding(
    n: usize,
    seed: u64,
    exclude: &HashSet<Vec<i64>>,
) -> ReverseDataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut src = Vec::with_capacity(n * SEQ_LEN);
    let mut tgt = Vec::with_capacity(n * SEQ_LEN);
    let mut made = 0;
    while made < n {
        let len = rng.random_range(MIN_LEN..=MAX_LEN);
        let digits: Vec<i64> =
            (0..len).map(|_| rng.random_range(0..10)).collect();
        if exclude.contains(&digits) {
            continue;
        }
        let (s, t) = encode_pair(&digits);
        src.extend_from_slice(&s);
        tgt.extend_from_slice(&t);
        made += 1;
    }
    let shape = [n as i64, SEQ_LEN as i64];
    let src = Tensor::from_slice(&src).view(shape);
    let tgt = Tensor::from_slice(&tgt).view(shape);
    ReverseDataset { src, tgt }
}
// ANCHOR_END: make_dataset

// ANCHOR: batches
/// Shuffled mini-batch indices for one epoch; the last partial batch is dropped
/// so that every step sees exactly `batch_size` samples.
pub fn epoch_batches(
    n: usize,
    batch_size: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Tensor> {
    let mut order: Vec<i64> = (0..n as i64).collect();
    order.shuffle(rng);
    order
        .chunks_exact(batch_size)
        .map(Tensor::from_slice)
        .collect()
}
// ANCHOR_END: batches

/// Reads digits typed by a person: each argument is one or more digits ("7 3 0"
/// or "730"). Errors name the offending input; nothing here panics.
pub fn parse_digits<S: AsRef<str>>(args: &[S]) -> Result<Vec<i64>> {
    let mut digits = Vec::new();
    for arg in args {
        for c in arg.as_ref().chars() {
            match c.to_digit(10) {
                Some(d) => digits.push(d as i64),
                None => bail!(
                    "'{}' is not a digit: give digits 0-9, e.g. 7 3 0 9 5",
                    arg.as_ref()
                ),
            }
        }
    }
    ensure!(
        !digits.is_empty(),
        "no digits given: give {MIN_LEN} to {MAX_LEN} digits, e.g. 7 3 0 9 5"
    );
    ensure!(
        digits.len() <= MAX_LEN,
        "{} digits is too many: the model was trained on at most {MAX_LEN}",
        digits.len()
    );
    Ok(digits)
}

/// One source row [1, SEQ_LEN] for `digits` on `device`.
pub fn source_tensor(digits: &[i64], device: Device) -> Tensor {
    Tensor::from_slice(&encode_pair(digits).0)
        .view([1, SEQ_LEN as i64])
        .to_device(device)
}

/// Row `i` of a [N, L] int64 tensor as a Vec.
pub fn row(t: &Tensor, i: i64) -> Vec<i64> {
    Vec::<i64>::try_from(&t.get(i).to_device(Device::Cpu).to_kind(Kind::Int64))
        .expect("an int64 row")
}

/// The digit sequence of every source row, in order; one copy off the tensor.
pub fn digit_rows(data: &ReverseDataset) -> Vec<Vec<i64>> {
    let flat = Vec::<i64>::try_from(&data.src.flatten(0, -1))
        .expect("int64 source rows");
    flat.chunks_exact(SEQ_LEN).map(digits_of).collect()
}

/// The distinct digit sequences of a data set's source rows.
pub fn digit_sequences(data: &ReverseDataset) -> HashSet<Vec<i64>> {
    digit_rows(data).into_iter().collect()
}
