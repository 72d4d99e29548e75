//! Chapter 11 — look inside: the attention weights of the trained model for one
//! input, and heatmaps of them. Nobody told the model to align backwards; if it
//! learned the task, its cross-attention draws an anti-diagonal.
use anyhow::{ensure, Result};
use tch::{Device, Kind, Tensor};

use crate::data::{row, source_tensor};
use crate::generate::greedy_decode;
use crate::transformer::{make_causal_mask, make_padding_mask, Transformer};
use crate::vocab::{digits_of, tokens_to_words, MAX_LEN, SEQ_LEN};

/// Every attention map of one forward pass for one input, each
/// [layers][heads][rows][cols].
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
    let (enc_w, dec_w) = tch::no_grad(|| {
        let src_mask = make_padding_mask(&src);
        let (memory, enc_w) =
            model.encoder.forward_with_weights(&src, &src_mask, false);
        let (_, dec_w) = model.decode_with_weights(
            &tgt_in,
            &memory,
            &src_mask,
            make_causal_mask,
            false,
        );
        (enc_w, dec_w)
    });
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
// ANCHOR_END: attention_maps

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
