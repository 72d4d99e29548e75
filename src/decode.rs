//! Chapter 10 — greedy decoding. At inference there is no answer to feed the decoder:
//! it must read back what it has produced so far, one token at a time.
use tch::{Device, Kind, Tensor};

use crate::data::{digits_of, row, BOS_ID, EOS_ID, PAD_ID, SEQ_LEN};
use crate::transformer::Transformer;

// ANCHOR: greedy
/// src: [B, Ls] → [B, ≤ max_len], each row `BOS t₁ t₂ … EOS PAD…`.
/// The encoder runs once; the decoder runs once per new token on everything produced
/// so far (chapter 12 of a GPT course would cache its keys and values instead).
pub fn greedy_decode(model: &Transformer, src: &Tensor, max_len: usize) -> Tensor {
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let b = src.size()[0];
        let mut out = Tensor::full([b, 1], BOS_ID, (Kind::Int64, src.device())); // [B, 1]
        let mut finished = Tensor::zeros([b], (Kind::Bool, src.device())); // [B]
        for _ in 0..max_len - 1 {
            let (logits, _) = model.decode(&out, &memory, &src_mask, false); // [B, t, V]
            let next = logits.select(1, -1).argmax(-1, false); // [B]
            // Rows that already said EOS keep emitting PAD, so the batch stays rectangular.
            let next = next.masked_fill(&finished, PAD_ID);
            out = Tensor::cat(&[out, next.unsqueeze(1)], 1); // [B, t+1]
            finished = finished.logical_or(&next.eq(EOS_ID));
            if finished.all().int64_value(&[]) != 0 {
                break;
            }
        }
        out
    })
}
// ANCHOR_END: greedy

// ANCHOR: exact_match
/// Share of rows whose generated digits and EOS equal the target's exactly. Stricter
/// than token accuracy: one wrong digit in twelve makes the whole row wrong.
pub fn exact_match(model: &Transformer, src: &Tensor, tgt: &Tensor, batch: i64) -> f64 {
    let device = model_device(model);
    let n = src.size()[0];
    let mut correct = 0;
    for start in (0..n).step_by(batch as usize) {
        let len = batch.min(n - start);
        let pred = greedy_decode(model, &src.narrow(0, start, len).to_device(device), SEQ_LEN).to_device(Device::Cpu);
        for i in 0..len {
            let (p, t) = (row(&pred, i), row(tgt, start + i));
            // Compare digits and require that the prediction actually ended with EOS.
            let ended = p.iter().skip(1).take(digits_of(&t).len() + 1).last() == Some(&EOS_ID);
            if ended && digits_of(&p) == digits_of(&t) {
                correct += 1;
            }
        }
    }
    correct as f64 / n as f64
}
// ANCHOR_END: exact_match

/// The device the model's weights live on.
pub fn model_device(model: &Transformer) -> Device {
    model.out_proj.ws.device()
}

/// Greedily reverses `digits` with `model`; returns the predicted digits.
pub fn reverse_digits(model: &Transformer, digits: &[i64]) -> Vec<i64> {
    let src = crate::data::source_tensor(digits, model_device(model));
    digits_of(&row(&greedy_decode(model, &src, SEQ_LEN), 0))
}
