//! Chapter 11 — look inside: the attention weights of the trained model for one
//! input, and heatmaps of them. Nobody told the model to align backwards; if it
//! learned the task, its cross-attention draws an anti-diagonal.
use anyhow::{ensure, Result};
use tch::{Device, Kind, Tensor};

use crate::attention::MultiHeadAttention;
use crate::data::{row, source_tensor, ReverseDataset};
use crate::decoder::DecoderLayerWeights;
use crate::generate::{correct_rows, greedy_decode};
use crate::train::teacher_forcing;
use crate::transformer::{make_causal_mask, make_padding_mask, Transformer};
use crate::vocab::{
    digits_of, tokens_to_words, BOS_ID, EOS_ID, MAX_LEN, SEQ_LEN,
};

/// Every attention map of one forward pass for one input, each
/// `[layers][heads][rows][cols]`.
#[derive(Debug, Clone)]
pub struct AttentionMaps {
    pub source_labels: Vec<String>,
    pub target_labels: Vec<String>,
    pub encoder_self: Vec<Vec<Vec<Vec<f64>>>>,
    pub decoder_self: Vec<Vec<Vec<Vec<f64>>>>,
    pub cross: Vec<Vec<Vec<Vec<f64>>>>,
    /// The digits the model produced.
    pub prediction: Vec<i64>,
}

fn labels(tokens: &[i64]) -> Vec<String> {
    tokens_to_words(tokens)
        .split(' ')
        .map(str::to_string)
        .collect()
}

/// [h, rows, cols] tensor cut to `rows`×`cols` → nested Vecs.
fn to_nested(w: &Tensor, rows: i64, cols: i64) -> Vec<Vec<Vec<f64>>> {
    let w = w
        .narrow(1, 0, rows)
        .narrow(2, 0, cols)
        .to_kind(Kind::Double)
        .to_device(Device::Cpu);
    (0..w.size()[0])
        .map(|h| {
            (0..rows)
                .map(|i| {
                    Vec::<f64>::try_from(&w.get(h).get(i))
                        .expect("a row of f64")
                })
                .collect()
        })
        .collect()
}

#[counted::counted]
// ANCHOR: every_weight
/// One forward pass, in inference mode and with the real masks, that keeps
/// every attention layer's weights: the encoder's, then the decoder's.
pub fn every_weight(
    model: &Transformer,
    src: &Tensor,
    tgt_in: &Tensor,
) -> (Vec<Tensor>, Vec<DecoderLayerWeights>) {
    tch::no_grad(|| {
        let src_mask = make_padding_mask(src);
        let (memory, enc_w) =
            model.encoder.forward_with_weights(src, &src_mask, false);
        let (_, dec_w) = model.decode_with_weights(
            tgt_in,
            &memory,
            &src_mask,
            make_causal_mask,
            false,
        );
        (enc_w, dec_w)
    })
}
// ANCHOR_END: every_weight

#[counted::counted]
// ANCHOR: attention_maps
/// Greedily decodes `digits`, then runs the decoder once more on its own
/// prediction (as the decoder input, BOS first) and keeps every layer's
/// weights. Rows and columns are cut to the real tokens: source = digits + EOS,
/// decoder input = BOS + predicted digits.
pub fn attention_maps(
    model: &Transformer,
    digits: &[i64],
) -> Result<AttentionMaps> {
    ensure!(
        !digits.is_empty() && digits.len() <= MAX_LEN,
        "give 1 to {MAX_LEN} digits, got {}",
        digits.len()
    );
    let src = source_tensor(digits, model.device()); // [1, Ls]
    let pred = greedy_decode(model, &src, SEQ_LEN); // [1, T]
    let tokens = row(&pred, 0);
    // Decoder input = prediction without its final token, as in teacher forcing.
    let tgt_in = pred.narrow(1, 0, pred.size()[1] - 1); // [1, T-1]
    let (enc_w, dec_w) = every_weight(model, &src, &tgt_in);
    let n_src = digits.len() as i64 + 1; // digits + EOS

    // Rows: BOS + one per generated digit, never more than the decoder actually
    // saw.
    let n_tgt = (digits.len() as i64 + 1).min(tgt_in.size()[1]);
    let source_labels = labels(&row(&src, 0)[..n_src as usize]);
    let target_labels = labels(&tokens[..n_tgt as usize]);
    Ok(AttentionMaps {
        source_labels,
        target_labels,
        encoder_self: enc_w
            .iter()
            .map(|w| to_nested(&w.get(0), n_src, n_src))
            .collect(),
        decoder_self: dec_w
            .iter()
            .map(|w| to_nested(&w.self_attn.get(0), n_tgt, n_tgt))
            .collect(),
        cross: dec_w
            .iter()
            .map(|w| to_nested(&w.cross_attn.get(0), n_tgt, n_src))
            .collect(),
        prediction: digits_of(&tokens),
    })
}
// ANCHOR_END: attention_maps

// ANCHOR: mean_over_heads
/// The chapter's matrix: the last layer's cross-attention averaged over heads.
pub fn mean_over_heads(layer: &[Vec<Vec<f64>>]) -> Vec<Vec<f64>> {
    let h = layer.len() as f64;
    let (rows, cols) = (layer[0].len(), layer[0][0].len());
    (0..rows)
        .map(|i| {
            (0..cols)
                .map(|j| layer.iter().map(|m| m[i][j]).sum::<f64>() / h)
                .collect()
        })
        .collect()
}
// ANCHOR_END: mean_over_heads

// ANCHOR: alignment
/// Where row i of a reversal cross-attention *should* look: the decoder input
/// at row i predicts digit n-1-i of the source; the last row predicts EOS, so
/// it should read EOS.
pub fn expected_column(row: usize, n_digits: usize) -> usize {
    if row < n_digits {
        n_digits - 1 - row
    } else {
        n_digits
    }
}

/// For each row: (argmax column, its weight, whether it is the expected column).
pub fn row_maxima(
    matrix: &[Vec<f64>],
    n_digits: usize,
) -> Vec<(usize, f64, bool)> {
    matrix
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (j, w) = r.iter().copied().enumerate().fold(
                (0, f64::MIN),
                |best, (j, w)| if w > best.1 { (j, w) } else { best },
            );
            (j, w, j == expected_column(i, n_digits))
        })
        .collect()
}
// ANCHOR_END: alignment

/// The matrix as a table with labels and two decimals.
pub fn format_matrix(
    matrix: &[Vec<f64>],
    row_labels: &[String],
    col_labels: &[String],
) -> String {
    let mut s = format!("{:>7} ", "");
    for c in col_labels {
        s += &format!("{c:>6}");
    }
    s.push('\n');
    for (label, r) in row_labels.iter().zip(matrix) {
        s += &format!("{label:>7} ");
        for v in r {
            s += &format!("{v:6.2}");
        }
        s.push('\n');
    }
    s
}

/// The three kinds of attention in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionKind {
    EncoderSelf,
    DecoderSelf,
    Cross,
}

impl AttentionKind {
    pub const ALL: [AttentionKind; 3] = [
        AttentionKind::EncoderSelf,
        AttentionKind::DecoderSelf,
        AttentionKind::Cross,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AttentionKind::EncoderSelf => "encoder self",
            AttentionKind::DecoderSelf => "decoder self",
            AttentionKind::Cross => "cross",
        }
    }
}

/// The attention module of `kind` in layer `layer`.
pub fn attention_module(
    model: &Transformer,
    kind: AttentionKind,
    layer: usize,
) -> &MultiHeadAttention {
    match kind {
        AttentionKind::EncoderSelf => &model.encoder.layers[layer].mha,
        AttentionKind::DecoderSelf => &model.decoder.layers[layer].self_mha,
        AttentionKind::Cross => &model.decoder.layers[layer].cross_mha,
    }
}

// ANCHOR: head_off
/// Runs `f` with head `head` of `mha` switched off, as if its output were all
/// zeros. The heads' outputs are concatenated and multiplied by W_o, so head h
/// reaches the rest of the model only through columns h·d_k..(h+1)·d_k of W_o:
/// zeroing those columns silences that head and nothing else. They are put
/// back afterwards, even if `f` panics.
pub fn with_head_off<T>(
    mha: &MultiHeadAttention,
    head: i64,
    f: impl FnOnce() -> T,
) -> T {
    struct Restore(Tensor, Tensor); // the columns (a view into W_o), a copy
    impl Drop for Restore {
        fn drop(&mut self) {
            tch::no_grad(|| self.0.copy_(&self.1));
        }
    }
    let mut cols = mha.W_o.ws.narrow(1, head * mha.d_k, mha.d_k); // [d, d_k]
    let saved = cols.copy();
    let _ = tch::no_grad(|| cols.zero_());
    let _restore = Restore(cols, saved);
    f()
}
// ANCHOR_END: head_off

/// Exact match on `data` with each head of each kind and layer switched off in
/// turn: `[kind][layer][head]`, kinds in the order of [`AttentionKind::ALL`].
pub fn head_ablation(
    model: &Transformer,
    data: &ReverseDataset,
) -> Vec<Vec<Vec<f64>>> {
    let rate = || {
        let right = correct_rows(model, &data.src, &data.tgt, 500);
        right.iter().filter(|&&r| r).count() as f64 / right.len() as f64
    };
    let (layers, heads) =
        (model.config.num_layers as usize, model.config.num_heads);
    AttentionKind::ALL
        .iter()
        .map(|&kind| {
            (0..layers)
                .map(|l| {
                    let mha = attention_module(model, kind, l);
                    (0..heads).map(|h| with_head_off(mha, h, rate)).collect()
                })
                .collect()
        })
        .collect()
}

/// How much a head matches by content: over every query that is a digit and
/// has the same digit at another key position, the mean attention weight on
/// those same-digit keys, and the mean share of keys they make up (what a head
/// that ignored content would give them on average). `[kind][layer][head]` of
/// (weight, share). Measured teacher-forced on `data`, with the true targets
/// as decoder input.
pub fn content_matching(
    model: &Transformer,
    data: &ReverseDataset,
) -> Vec<Vec<Vec<(f64, f64)>>> {
    let device = model.device();
    let src = data.src.to_device(device);
    let (tgt_in, _) = teacher_forcing(&data.tgt.to_device(device));
    let (enc_w, dec_w) = every_weight(model, &src, &tgt_in);
    let digit = |t: &Tensor| t.gt(EOS_ID); // ids 3-12 are the digits 0-9
    let real = |t: &Tensor| t.ge(BOS_ID); // anything but PAD
    let lt = tgt_in.size()[1];
    // [Lt, Lt], true = visible
    let causal = make_causal_mask(lt, device).view([lt, lt]).logical_not();
    let kinds: [(&Tensor, &Tensor, Option<&Tensor>); 3] = [
        (&src, &src, None),
        (&tgt_in, &tgt_in, Some(&causal)),
        (&tgt_in, &src, None),
    ];
    kinds
        .iter()
        .zip(AttentionKind::ALL)
        .map(|(&(q, k, visible), kind)| {
            // same[b, i, j]: key j holds query i's digit, and is another position
            let mut same = q.unsqueeze(2).eq_tensor(&k.unsqueeze(1));
            same = same.logical_and(&digit(q).unsqueeze(2));
            let mut keys = real(k).unsqueeze(1).expand_as(&same);
            if let Some(v) = visible {
                keys = keys.logical_and(v);
            }
            if kind != AttentionKind::Cross {
                let (lq, lk) = (q.size()[1], k.size()[1]);
                let eye = Tensor::eye_m(lq, lk, (Kind::Bool, device));
                keys = keys.logical_and(&eye.logical_not());
            }
            let same = same.logical_and(&keys).to_kind(Kind::Float);
            let counts = same.sum_dim_intlist(-1, false, Kind::Float); // [B, Lq]
            let has = counts.gt(0.0); // queries with a same-digit key
            let n = has.sum(Kind::Float);
            let keys_n = keys.to_kind(Kind::Float).sum_dim_intlist(
                -1,
                false,
                Kind::Float,
            );
            let share = ((&counts / keys_n.clamp_min(1.0))
                * has.to_kind(Kind::Float))
            .sum(Kind::Float)
                / &n;
            let share = share.double_value(&[]);
            let per_layer: Vec<&Tensor> = match kind {
                AttentionKind::EncoderSelf => enc_w.iter().collect(),
                AttentionKind::DecoderSelf => {
                    dec_w.iter().map(|w| &w.self_attn).collect()
                }
                AttentionKind::Cross => {
                    dec_w.iter().map(|w| &w.cross_attn).collect()
                }
            };
            per_layer
                .iter()
                .map(|w| {
                    let mass = (*w * same.unsqueeze(1)).sum_dim_intlist(
                        -1,
                        false,
                        Kind::Float,
                    ); // [B, h, Lq]
                    let mass = (mass * has.unsqueeze(1).to_kind(Kind::Float))
                        .sum_dim_intlist([0, 2].as_slice(), false, Kind::Float)
                        / &n; // [h]
                    Vec::<f64>::try_from(&mass.to_kind(Kind::Double))
                        .expect("one value per head")
                        .into_iter()
                        .map(|m| (m, share))
                        .collect()
                })
                .collect()
        })
        .collect()
}
