//! Chapter 11 — look inside: the attention weights of the trained model for one input,
//! and heatmaps of them. Nobody told the model to align backwards; if it learned the
//! task, its cross-attention draws an anti-diagonal.
use std::path::Path;

use anyhow::{bail, ensure, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use tch::{Device, Kind, Tensor};

use crate::data::{digits_of, row, source_tensor, tokens_to_words, MAX_LEN, SEQ_LEN};
use crate::decode::{greedy_decode, model_device};
use crate::transformer::{make_causal_mask, Transformer};

/// Every attention map of one forward pass for one input, each [layers][heads][rows][cols].
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
    tokens_to_words(tokens).split(' ').map(str::to_string).collect()
}

/// [h, rows, cols] tensor cut to `rows`×`cols` → nested Vecs.
fn to_nested(w: &Tensor, rows: i64, cols: i64) -> Vec<Vec<Vec<f64>>> {
    let w = w.narrow(1, 0, rows).narrow(2, 0, cols).to_kind(Kind::Double).to_device(Device::Cpu);
    (0..w.size()[0])
        .map(|h| (0..rows).map(|i| Vec::<f64>::try_from(&w.get(h).get(i)).expect("a row of f64")).collect())
        .collect()
}

// ANCHOR: attention_maps
/// Greedily decodes `digits`, then runs the decoder once more on its own prediction (as
/// the decoder input, BOS first) and keeps every layer's weights. Rows and columns are
/// cut to the real tokens: source = digits + EOS, decoder input = BOS + predicted digits.
pub fn attention_maps(model: &Transformer, digits: &[i64]) -> Result<AttentionMaps> {
    ensure!(!digits.is_empty() && digits.len() <= MAX_LEN, "give 1 to {MAX_LEN} digits, got {}", digits.len());
    let src = source_tensor(digits, model_device(model)); // [1, Ls]
    let pred = greedy_decode(model, &src, SEQ_LEN); // [1, T]
    let tokens = row(&pred, 0);
    // Decoder input = prediction without its final token, as in teacher forcing.
    let tgt_in = pred.narrow(1, 0, pred.size()[1] - 1); // [1, T-1]
    let (enc_w, dec_w) = tch::no_grad(|| {
        let (memory, enc_w) = model.encoder.forward_with_weights(&src, &crate::transformer::make_padding_mask(&src), false);
        let (_, dec_w) = model.decode_with_mask_fn(&tgt_in, &memory, &crate::transformer::make_padding_mask(&src), make_causal_mask, false);
        (enc_w, dec_w)
    });
    let n_src = digits.len() as i64 + 1; // digits + EOS
    // Rows: BOS + one per generated digit, never more than the decoder actually saw.
    let n_tgt = (digits.len() as i64 + 1).min(tgt_in.size()[1]);
    let source_labels = labels(&row(&src, 0)[..n_src as usize]);
    let target_labels = labels(&tokens[..n_tgt as usize]);
    Ok(AttentionMaps {
        source_labels,
        target_labels,
        encoder_self: enc_w.iter().map(|w| to_nested(&w.get(0), n_src, n_src)).collect(),
        decoder_self: dec_w.iter().map(|w| to_nested(&w.self_attn.get(0), n_tgt, n_tgt)).collect(),
        cross: dec_w.iter().map(|w| to_nested(&w.cross_attn.get(0), n_tgt, n_src)).collect(),
        prediction: digits_of(&tokens),
    })
}

/// The chapter's matrix: the last layer's cross-attention averaged over heads.
pub fn mean_over_heads(layer: &[Vec<Vec<f64>>]) -> Vec<Vec<f64>> {
    let h = layer.len() as f64;
    let (rows, cols) = (layer[0].len(), layer[0][0].len());
    (0..rows).map(|i| (0..cols).map(|j| layer.iter().map(|m| m[i][j]).sum::<f64>() / h).collect()).collect()
}
// ANCHOR_END: attention_maps

// ANCHOR: alignment
/// Where row i of a reversal cross-attention *should* look: the decoder input at row i
/// predicts digit n-1-i of the source; the last row predicts EOS, so it should read EOS.
pub fn expected_column(row: usize, n_digits: usize) -> usize {
    if row < n_digits { n_digits - 1 - row } else { n_digits }
}

/// For each row: (argmax column, its weight, whether it is the expected column).
pub fn row_maxima(matrix: &[Vec<f64>], n_digits: usize) -> Vec<(usize, f64, bool)> {
    matrix
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (j, w) = r.iter().copied().enumerate().fold((0, f64::MIN), |best, (j, w)| if w > best.1 { (j, w) } else { best });
            (j, w, j == expected_column(i, n_digits))
        })
        .collect()
}
// ANCHOR_END: alignment

/// The matrix as a table with labels and two decimals.
pub fn format_matrix(matrix: &[Vec<f64>], row_labels: &[String], col_labels: &[String]) -> String {
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

/// One heatmap of a figure.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub matrix: Vec<Vec<f64>>,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
}

// ANCHOR: heatmap
/// Draws `panels` in a grid of `columns`, sharing one colour bar (0 to 1, white to blue),
/// to an .svg or .png file chosen by extension. `values` writes each weight in its cell.
pub fn draw_heatmaps(path: &Path, title: &str, panels: &[Panel], columns: usize, values: bool, x_desc: &str, y_desc: &str) -> Result<()> {
    ensure!(!panels.is_empty() && columns > 0, "nothing to draw");
    crate::plot::register_fonts();
    let cell = if values { 52 } else { 22 };
    let (rows_max, cols_max) = panels.iter().fold((0, 0), |(r, c), p| (r.max(p.matrix.len()), c.max(p.matrix[0].len())));
    let panel_w = 90 + cols_max as u32 * cell;
    let panel_h = 70 + rows_max as u32 * cell + 40;
    let grid_rows = panels.len().div_ceil(columns) as u32;
    let size = (columns as u32 * panel_w + 110, grid_rows * panel_h + 60);
    crate::train::create_parent_dir(path)?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw_on(&root, title, panels, columns, values, cell, (panel_w, panel_h), (x_desc, y_desc))?;
            root.present()?;
        }
        Some("png") => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            draw_on(&root, title, panels, columns, values, cell, (panel_w, panel_h), (x_desc, y_desc))?;
            root.present()?;
        }
        _ => bail!("{}: heatmaps are written as .svg or .png", path.display()),
    }
    Ok(())
}
// ANCHOR_END: heatmap

/// White (0) to a deep blue (1), like matplotlib's "Blues".
fn blues(v: f64) -> RGBColor {
    let t = v.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(247.0, 8.0), lerp(251.0, 48.0), lerp(255.0, 107.0))
}

#[allow(clippy::too_many_arguments)]
fn draw_on<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, panels: &[Panel], columns: usize, values: bool, cell: u32, panel: (u32, u32), desc: (&str, &str)) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let center = Pos::new(HPos::Center, VPos::Center);
    root.draw(&Text::new(title.to_string(), ((root.dim_in_pixel().0 / 2) as i32, 22), ("sans-serif", 20).into_font().color(&BLACK).pos(center))).map_err(err)?;
    let small = ("sans-serif", if values { 14 } else { 11 }).into_font();
    for (k, p) in panels.iter().enumerate() {
        let (ox, oy) = ((k % columns) as i32 * panel.0 as i32 + 70, (k / columns) as i32 * panel.1 as i32 + 80);
        let c = cell as i32;
        root.draw(&Text::new(p.title.clone(), (ox + c * p.col_labels.len() as i32 / 2, oy - 18), ("sans-serif", 14).into_font().color(&BLACK).pos(center))).map_err(err)?;
        for (i, r) in p.matrix.iter().enumerate() {
            for (j, &v) in r.iter().enumerate() {
                let (x, y) = (ox + j as i32 * c, oy + i as i32 * c);
                root.draw(&Rectangle::new([(x, y), (x + c, y + c)], blues(v).filled())).map_err(err)?;
                if values {
                    let color = if v > 0.5 { WHITE } else { BLACK };
                    root.draw(&Text::new(format!("{v:.2}"), (x + c / 2, y + c / 2), small.clone().color(&color).pos(center))).map_err(err)?;
                }
            }
        }
        for (i, l) in p.row_labels.iter().enumerate() {
            root.draw(&Text::new(l.clone(), (ox - 6, oy + i as i32 * c + c / 2), small.clone().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center)))).map_err(err)?;
        }
        for (j, l) in p.col_labels.iter().enumerate() {
            root.draw(&Text::new(l.clone(), (ox + j as i32 * c + c / 2, oy + p.matrix.len() as i32 * c + 12), small.clone().color(&BLACK).pos(center))).map_err(err)?;
        }
        let bottom = oy + p.matrix.len() as i32 * c;
        root.draw(&Text::new(desc.0.to_string(), (ox + c * p.col_labels.len() as i32 / 2, bottom + 32), ("sans-serif", 12).into_font().color(&BLACK).pos(center))).map_err(err)?;
        root.draw(&Text::new(desc.1.to_string(), (ox - 50, oy + c * p.matrix.len() as i32 / 2), ("sans-serif", 12).into_font().transform(FontTransform::Rotate270).color(&BLACK).pos(center))).map_err(err)?;
    }
    // The colour bar, shared by every panel: 0 at the bottom, 1 at the top.
    let (w, _) = root.dim_in_pixel();
    let (bx, by, bh) = (w as i32 - 70, 80, 200);
    for s in 0..bh {
        let v = 1.0 - s as f64 / bh as f64;
        root.draw(&Rectangle::new([(bx, by + s), (bx + 18, by + s + 1)], blues(v).filled())).map_err(err)?;
    }
    root.draw(&Rectangle::new([(bx, by), (bx + 18, by + bh)], BLACK.stroke_width(1))).map_err(err)?;
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let y = by + ((1.0 - t) * bh as f64) as i32;
        root.draw(&Text::new(format!("{t:.2}"), (bx + 24, y), ("sans-serif", 11).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center)))).map_err(err)?;
    }
    Ok(())
}
