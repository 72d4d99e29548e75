//! Chapter 08 exercises — other tasks, other layouts.
//! Check with `cargo test --test exercises_ch08`.
use tch::{Device, Kind, Tensor};

use transformer_course::data::{make_dataset, ReverseDataset};
use transformer_course::vocab::{
    digit_token, BOS_ID, EOS_ID, MAX_LEN, PAD_ID, SEQ_LEN,
};

/// ★ ex08_copy_dataset — the copy task, the easiest sanity check of a
/// sequence-to- sequence model: the target is the source in the same order.
/// Same layout as `make_dataset` (src `d₁ … dₙ EOS PAD…`, tgt `BOS d₁ … dₙ EOS
/// PAD…`, both [n, SEQ_LEN]), and the same seed gives the same sources as
/// `make_dataset`.
pub fn make_copy_dataset(n: usize, seed: u64) -> ReverseDataset {
    // ANCHOR: ex08_copy_dataset
    // HINT: start from make_dataset(n, seed) and keep its sources. The copy
    // HINT: target is the source shifted one place to the right with BOS in
    // HINT: front; the shift drops the last column, which is always PAD.
    let reverse = make_dataset(n, seed);
    let bos = Tensor::full([n as i64, 1], BOS_ID, (Kind::Int64, Device::Cpu));
    let tgt =
        Tensor::cat(&[bos, reverse.src.narrow(1, 0, SEQ_LEN as i64 - 1)], 1);
    ReverseDataset {
        src: reverse.src,
        tgt,
    }
    // ANCHOR_END: ex08_copy_dataset
}

/// Length of one decoder-only row: up to MAX_LEN digits, BOS, the reversed
/// digits, EOS.
pub const LM_LEN: usize = 2 * MAX_LEN + 2; // 26

/// ★★ ex08_lm_layout — reversal for a decoder-only model (chapter 05's exercise
/// ex05_decoder_only_lm): the whole example is one sequence
/// `s = d₁ … dₙ BOS dₙ … d₁ EOS PAD…` of length LM_LEN (tokens are
/// `digit_token(d)`). Return (input, labels), both LM_LEN − 1 long: input =
/// s[..LM_LEN−1], labels[i] = s[i+1] — except that a label is PAD wherever the
/// token to predict is still part of the prompt (the digits d₂ … dₙ and the
/// BOS), since the model is not asked to guess the question.
pub fn lm_example(digits: &[i64]) -> ([i64; LM_LEN - 1], [i64; LM_LEN - 1]) {
    // ANCHOR: ex08_lm_layout
    // HINT: write the whole sequence s first, on a background of PAD. Then
    // HINT: input and labels are two windows of it, one place apart; blank
    // HINT: (PAD) the labels that would ask for the prompt. Which is the first
    // HINT: label that counts?
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[n] = BOS_ID;
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n..].copy_from_slice(&s[n + 1..]); // input BOS (at n) predicts dₙ
    (input, labels)
    // ANCHOR_END: ex08_lm_layout
}
