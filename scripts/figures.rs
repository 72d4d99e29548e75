//! Not a chapter: draws the book's explanatory pictures (a position pair turning on
//! a circle, attention as data flow, the teacher-forcing shift, GELU, strides, float formats, the decoder layer,
//! the diagonal-0 mutant, FlashAttention's tiling, a KV cache). Every number in
//! them is computed here with the course's library and libtorch, and
//! `scripts/regen-outputs.sh` reruns this program like any chapter:
//!
//!     cargo run --release --bin figures -- --out-dir book/src/figures
//!
//! Diagrams are SVG written by hand (a small writer below); plots use plotters.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Parser;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::scaled_dot_product;
use transformer_course::config::TransformerConfig;
use transformer_course::data::encode_pair;
use transformer_course::embedding::sinusoidal_position_encoding;
use transformer_course::mask_checks::CAUSAL_MASKS;
use transformer_course::train::teacher_forcing;
use transformer_course::transformer::{make_padding_mask, Transformer};
use transformer_course::vocab::tokens_to_words;
use workbench::cli::run_main;
use workbench::output::{check_writable, Batch};
use workbench::plot::{heatmaps, line_chart, Figure, Format, LineChart, Panel};

/// Draw the book's explanatory figures from real numbers.
#[derive(Parser)]
struct Args {
    /// Where the figures go.
    #[arg(long, default_value = "out/figures")]
    out_dir: PathBuf,
}

/// Every file this program writes, and the page that shows it.
const FIGURES: [(&str, &str); 10] = [
    ("01_position_circle.svg", "chapter 01"),
    ("02_attention_flow.svg", "chapter 02"),
    ("02_view_transpose.svg", "chapter 02 and the tch primer"),
    ("03_gelu_relu.svg", "chapter 03"),
    ("05_decoder_layer.svg", "chapter 05"),
    ("07_diagonal_0_mutant.svg", "chapter 07"),
    ("09_teacher_forcing.svg", "chapter 09"),
    ("09_float_formats.svg", "chapter 09"),
    ("10_kv_cache.svg", "chapter 10"),
    ("12_flash_tiling.svg", "chapter 12"),
];

fn main() {
    let args = Args::parse();
    run_main(|| run(&args.out_dir))
}

fn run(out: &Path) -> anyhow::Result<()> {
    for (name, _) in FIGURES {
        check_writable(&out.join(name))?;
    }
    let mut files = Batch::default();
    let mut put = |name: &str, svg: String| -> anyhow::Result<()> {
        let path = out.join(name);
        files.stage_bytes(&path, svg.as_bytes())?;
        println!("wrote {}", path.display());
        Ok(())
    };
    put("01_position_circle.svg", position_circle())?;
    put("02_attention_flow.svg", attention_flow())?;
    put("02_view_transpose.svg", view_transpose())?;
    put("03_gelu_relu.svg", gelu_relu()?)?;
    put("05_decoder_layer.svg", decoder_layer())?;
    put("07_diagonal_0_mutant.svg", diagonal_0_mutant()?)?;
    put("09_teacher_forcing.svg", teacher_forcing_shift())?;
    put("09_float_formats.svg", float_formats())?;
    put("10_kv_cache.svg", kv_cache())?;
    put("12_flash_tiling.svg", flash_tiling())?;
    files.commit()
}

// ---- a small SVG writer ----------------------------------------------------------------

const BLUE: &str = "#2b6cb0";
const GREY: &str = "#a0a0a0";
const INK: &str = "#1a1a1a";

struct Svg {
    w: f64,
    h: f64,
    body: String,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Svg {
    fn new(w: f64, h: f64) -> Svg {
        Svg {
            w,
            h,
            body: String::new(),
        }
    }

    fn rect(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        stroke: &str,
    ) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}" stroke="{stroke}" stroke-width="1"/>"#
        );
    }

    fn round_rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="8" fill="{fill}" stroke="{INK}" stroke-width="1.2"/>"#
        );
    }

    /// Text; `anchor` is start, middle or end.
    fn text(
        &mut self,
        x: f64,
        y: f64,
        s: &str,
        size: f64,
        anchor: &str,
        fill: &str,
    ) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" fill="{fill}">{}</text>"#,
            esc(s)
        );
    }

    fn bold(&mut self, x: f64, y: f64, s: &str, size: f64, anchor: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" font-weight="bold" text-anchor="{anchor}" fill="{INK}">{}</text>"#,
            esc(s)
        );
    }

    fn line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: &str,
        arrow: bool,
    ) {
        let head = if arrow {
            r#" marker-end="url(#arrow)""#
        } else {
            ""
        };
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="1.5"{head}/>"#
        );
    }

    /// A polyline with an arrow head at its end.
    fn path(&mut self, points: &[(f64, f64)], stroke: &str, dashed: bool) {
        let d: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let dash = if dashed {
            r#" stroke-dasharray="5,4""#
        } else {
            ""
        };
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="1.5"{dash} marker-end="url(#arrow)"/>"#,
            d.join(" ")
        );
    }

    /// A grid of labelled cells at (x, y); `fill(i, j)` colours each cell.
    fn grid(
        &mut self,
        (x, y): (f64, f64),
        (cw, ch): (f64, f64),
        cells: &[Vec<String>],
        fill: impl Fn(usize, usize) -> (String, &'static str),
    ) {
        for (i, row) in cells.iter().enumerate() {
            for (j, s) in row.iter().enumerate() {
                let (bg, ink) = fill(i, j);
                let (cx, cy) = (x + j as f64 * cw, y + i as f64 * ch);
                self.rect(cx, cy, cw, ch, &bg, "#606060");
                self.text(
                    cx + cw / 2.0,
                    cy + ch / 2.0 + 4.5,
                    s,
                    13.0,
                    "middle",
                    ink,
                );
            }
        }
    }

    fn finish(self) -> String {
        format!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Verdana, sans-serif">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{INK}"/></marker></defs>
<rect width="100%" height="100%" fill="white"/>
{body}</svg>
"##,
            w = self.w,
            h = self.h,
            body = self.body
        )
    }
}

/// Matplotlib's "Blues" from white (0) to dark blue (1), and the ink that reads on it.
fn blues(t: f64) -> (String, &'static str) {
    let t = t.clamp(0.0, 1.0);
    let m = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    let colour = format!(
        "#{:02x}{:02x}{:02x}",
        m(247.0, 8.0),
        m(251.0, 48.0),
        m(255.0, 107.0)
    );
    (colour, if t > 0.5 { "white" } else { INK })
}

/// A [rows, cols] tensor as rows of f64.
fn rows_of(t: &Tensor) -> Vec<Vec<f64>> {
    let t = t
        .reshape([-1, *t.size().last().expect("a matrix")])
        .to_kind(Kind::Double);
    (0..t.size()[0])
        .map(|i| Vec::<f64>::try_from(&t.get(i)).expect("f64 row"))
        .collect()
}

fn fmt_rows(m: &[Vec<f64>], digits: usize) -> Vec<Vec<String>> {
    m.iter()
        .map(|r| r.iter().map(|v| format!("{v:.digits$}")).collect())
        .collect()
}

// ---- chapter 01: one (sin, cos) pair as a point on a circle -----------------------------

/// Pair 0 of chapter 01's table (columns 0 and 1, one radian per position) drawn as a
/// point on the unit circle, positions 0 to 6. Two arcs of the same offset k = 2,
/// started at different positions, turn by the same angle: the rotation argument of
/// chapter 01, checked on the table itself (printed) rather than on the formula.
fn position_circle() -> String {
    const D: i64 = 128;
    const LEN: i64 = 14;
    const K: usize = 2;
    let pe = rows_of(&sinusoidal_position_encoding(LEN, D));
    // Column 0 holds sin(t·ω), column 1 cos(t·ω), with ω = 1 for pair 0.
    let pair: Vec<(f64, f64)> = pe.iter().map(|r| (r[0], r[1])).collect();
    let angle = |(s, c): (f64, f64)| s.atan2(c);
    let steps: Vec<f64> = pair
        .windows(2)
        .map(|w| (angle(w[1]) - angle(w[0])).rem_euclid(std::f64::consts::TAU))
        .collect();
    let (lo, hi) = steps
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &a| (lo.min(a), hi.max(a)));
    println!(
        "01_position_circle: pair 0, the turn per position: {lo:.4} to {hi:.4} rad"
    );
    // The same matrix for every t: R(kω) maps (sin, cos) at t onto (sin, cos) at t + k.
    let phi = K as f64;
    let worst = (0..pair.len() - K)
        .map(|t| {
            let (s, c) = pair[t];
            let rotated = (
                phi.cos() * s + phi.sin() * c,
                -phi.sin() * s + phi.cos() * c,
            );
            let (s2, c2) = pair[t + K];
            (rotated.0 - s2).abs().max((rotated.1 - c2).abs())
        })
        .fold(0.0, f64::max);
    println!(
        "01_position_circle: pair 0, PE[t + {K}] = R({phi} rad) · PE[t], t = 0..{}, \
         error ≤ {worst:.1e}",
        pair.len() - K - 1
    );

    let (cx, cy, r) = (210.0, 240.0, 150.0);
    let at =
        |(s, c): (f64, f64), radius: f64| (cx + radius * s, cy - radius * c);
    let mut svg = Svg::new(760.0, 440.0);
    svg.bold(
        380.0,
        28.0,
        "One (sin, cos) pair of the position table turns on a circle",
        17.0,
        "middle",
    );
    svg.line((cx - r - 25.0, cy), (cx + r + 25.0, cy), GREY, false);
    svg.line((cx, cy + r + 25.0), (cx, cy - r - 25.0), GREY, false);
    svg.text(cx + r + 28.0, cy + 4.0, "sin", 12.0, "start", GREY);
    svg.text(cx + 26.0, cy - r - 14.0, "cos", 12.0, "start", GREY);
    let _ = writeln!(
        svg.body,
        r#"<circle cx="{cx}" cy="{cy}" r="{r}" fill="none" stroke="{GREY}" stroke-width="1"/>"#
    );
    // Arcs inside the circle, one per start, each k positions long.
    for (start, colour) in [(0usize, BLUE), (3, ORANGE)] {
        let (a0, a1) = (angle(pair[start]), angle(pair[start]) + phi);
        let points: Vec<(f64, f64)> = (0..=24)
            .map(|j| {
                let a = a0 + (a1 - a0) * j as f64 / 24.0;
                at((a.sin(), a.cos()), 0.78 * r)
            })
            .collect();
        svg.path(&points, colour, false);
        let mid = a0 + phi / 2.0;
        svg.text(
            at((mid.sin(), mid.cos()), 0.56 * r).0,
            at((mid.sin(), mid.cos()), 0.56 * r).1 + 4.0,
            &format!("t = {start} → {}", start + K),
            12.0,
            "middle",
            colour,
        );
    }
    for (t, &p) in pair.iter().enumerate().take(7) {
        let (x, y) = at(p, r);
        let _ = writeln!(
            svg.body,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="{INK}"/>"#
        );
        let (lx, ly) = at(p, r + 20.0);
        svg.text(lx, ly + 4.0, &format!("t = {t}"), 12.0, "middle", INK);
    }
    let lines = [
        "Pair 0 (columns 0 and 1): ω = 1, so each",
        "position turns the point by 1 radian.",
        "",
        "Both arcs are k = 2 positions long and turn by",
        "the same angle, 2 radians, wherever they start.",
        "That turn is one 2 × 2 rotation matrix R(kω):",
        "",
        "  (sin((t+k)ω), cos((t+k)ω)) = R(kω) · (sin(tω), cos(tω))",
        "",
        "the same for every t, so PE[t + k] is a fixed",
        "linear function of PE[t]. Every other pair turns",
        "the same way, by its own ω, more slowly.",
    ];
    for (i, line) in lines.iter().enumerate() {
        svg.text(405.0, 110.0 + 22.0 * i as f64, line, 13.0, "start", INK);
    }
    svg.finish()
}

// ---- chapter 02: one attention as data flow ----------------------------------------------

const ORANGE: &str = "#dd6b20";

/// Chapter 02's worked example, step by step, with its real numbers.
fn attention_flow() -> String {
    let m = |rows: [[f32; 2]; 3]| {
        Tensor::from_slice(rows.as_flattened()).view([1, 1, 3, 2])
    };
    let q = m([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
    let k = m([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
    let v = m([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]]);
    let scores = q.matmul(&k.transpose(-2, -1)) / 2f64.sqrt();
    let (out, weights) = scaled_dot_product(&q, &k, &v, None, 0.0, false);
    let (q, kt, v) = (rows_of(&q), rows_of(&k.transpose(-2, -1)), rows_of(&v));
    let (scores, weights, out) =
        (rows_of(&scores), rows_of(&weights), rows_of(&out));
    let row2: Vec<String> =
        weights[2].iter().map(|w| format!("{w:.4}")).collect();
    println!("02_attention_flow: softmax row 2 = {}", row2.join(" "));

    let mut s = Svg::new(1010.0, 470.0);
    let cell = (52.0, 30.0);
    s.bold(
        490.0,
        26.0,
        "One attention, step by step (chapter 02's worked example, d_k = 2)",
        17.0,
        "middle",
    );
    let plain = |_: usize, _: usize| ("#f4f4f4".to_string(), INK);
    let heat =
        |m: &[Vec<f64>], i: usize, j: usize, hi: f64| blues(m[i][j] / hi);
    // Row 1: Q · Kᵀ / √d_k → softmax.
    let y1 = 90.0;
    let boxes = [
        (40.0, "Q  [3, 2]"),
        (200.0, "Kᵀ  [2, 3]"),
        (440.0, "Q Kᵀ / √2  [3, 3]"),
        (760.0, "weights  [3, 3]"),
    ];
    for (x, label) in boxes {
        s.bold(x, y1 - 14.0, label, 14.0, "start");
    }
    s.grid((40.0, y1), cell, &fmt_rows(&q, 0), plain);
    s.text(170.0, y1 + 50.0, "·", 28.0, "middle", INK);
    s.grid((200.0, y1 + 15.0), cell, &fmt_rows(&kt, 0), plain);
    s.line((370.0, y1 + 45.0), (430.0, y1 + 45.0), INK, true);
    s.text(400.0, y1 + 36.0, "÷ √2", 12.0, "middle", INK);
    let top = scores.iter().flatten().fold(0f64, |a, &b| a.max(b));
    s.grid((440.0, y1), cell, &fmt_rows(&scores, 2), |i, j| {
        heat(&scores, i, j, top)
    });
    s.line((610.0, y1 + 45.0), (750.0, y1 + 45.0), INK, true);
    s.text(680.0, y1 + 36.0, "softmax of", 12.0, "middle", INK);
    s.text(680.0, y1 + 62.0, "each row", 12.0, "middle", INK);
    s.grid((760.0, y1), cell, &fmt_rows(&weights, 2), |i, j| {
        heat(&weights, i, j, 1.0)
    });
    // Token labels on the left of Q and of the score grids.
    for i in 0..3 {
        let y = y1 + i as f64 * cell.1 + 20.0;
        s.text(32.0, y, &format!("token {i}"), 11.0, "end", INK);
    }
    s.text(
        440.0,
        y1 + 108.0,
        "row i: how well query i matches every key",
        12.0,
        "start",
        INK,
    );
    s.text(760.0, y1 + 108.0, "every row sums to 1", 12.0, "start", INK);

    // Row 2: weights · V.
    let y2 = 300.0;
    s.path(
        &[
            (838.0, y1 + 118.0),
            (838.0, 236.0),
            (118.0, 236.0),
            (118.0, y2 - 30.0),
        ],
        GREY,
        true,
    );
    for (x, label) in [
        (40.0, "weights  [3, 3]"),
        (290.0, "V  [3, 2]"),
        (520.0, "output  [3, 2]"),
    ] {
        s.bold(x, y2 - 14.0, label, 14.0, "start");
    }
    s.grid((40.0, y2), cell, &fmt_rows(&weights, 2), |i, j| {
        heat(&weights, i, j, 1.0)
    });
    s.text(245.0, y2 + 50.0, "·", 28.0, "middle", INK);
    s.grid((290.0, y2), cell, &fmt_rows(&v, 0), plain);
    s.line((410.0, y2 + 45.0), (510.0, y2 + 45.0), INK, true);
    s.grid((520.0, y2), cell, &fmt_rows(&out, 2), plain);
    s.text(
        520.0,
        y2 + 108.0,
        "row i: the mix of V's rows that row i of the weights asks for",
        12.0,
        "start",
        INK,
    );
    // Follow token 2 through: an orange frame on its row everywhere.
    let frame = |s: &mut Svg, x: f64, y: f64, w: f64| {
        let _ = writeln!(
            s.body,
            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="none" stroke="{ORANGE}" stroke-width="3"/>"#,
            y + 2.0 * cell.1,
            cell.1
        );
    };
    for (x, y, n) in [
        (40.0, y1, 2.0),
        (440.0, y1, 3.0),
        (760.0, y1, 3.0),
        (40.0, y2, 3.0),
        (520.0, y2, 2.0),
    ] {
        frame(&mut s, x, y, n * cell.0);
    }
    let w = &weights[2];
    s.text(
        40.0,
        y2 + 140.0,
        &format!(
            "Token 2 (orange) mixes all three values: output = {:.2}·[10, 0] + {:.2}·[0, 10] + {:.2}·[5, 5] = [{:.2}, {:.2}]",
            w[0], w[1], w[2], out[2][0], out[2][1]
        ),
        13.0,
        "start",
        ORANGE,
    );
    s.body = format!("<g transform=\"translate(30, 0)\">\n{}</g>\n", s.body);
    s.finish()
}

// ---- chapter 02 and the primer: memory order under view and transpose ------------------

/// A 2×3 tensor, its `view` as 3×2, its transpose and the transpose made
/// contiguous: the strides libtorch reports, and the memory each one reads.
fn view_transpose() -> String {
    let t = Tensor::arange(6, (Kind::Int64, Device::Cpu)).view([2, 3]);
    let cases = [
        (
            "t = arange(6).view([2, 3])",
            t.shallow_clone(),
            "6 numbers, in this order",
        ),
        ("t.view([3, 2])", t.view([3, 2]), "same storage"),
        ("t.transpose(0, 1)", t.transpose(0, 1), "same storage"),
        (
            "t.transpose(0, 1).contiguous()",
            t.transpose(0, 1).contiguous(),
            "a new copy",
        ),
    ];
    let mut s = Svg::new(1000.0, 380.0);
    s.bold(500.0, 26.0, "One storage, several tensors: shape and strides decide the reading order", 17.0, "middle");
    let cell = (40.0, 30.0);
    for (n, (title, x, kept)) in cases.iter().enumerate() {
        let ox = 20.0 + n as f64 * 245.0;
        let (size, stride) = (x.size(), x.stride());
        let contiguous = x.is_contiguous();
        // Short words, not `size .. contiguous true`: the longest title's line then
        // fits the page's column.
        let layout = if contiguous {
            "contiguous"
        } else {
            "not contiguous"
        };
        println!(
            "02_view_transpose: {title}: {size:?} stride {stride:?} {layout}"
        );
        s.bold(ox, 62.0, title, 13.0, "start");
        s.text(
            ox,
            82.0,
            &format!("shape {size:?}, strides {stride:?}"),
            12.0,
            "start",
            INK,
        );
        let values = rows_of(&x.to_kind(Kind::Double));
        let cells: Vec<Vec<String>> = values
            .iter()
            .map(|r| r.iter().map(|v| format!("{v:.0}")).collect())
            .collect();
        s.grid((ox, 96.0), cell, &cells, |_, _| {
            ("#f4f4f4".to_string(), INK)
        });
        // Reading the grid row by row visits these storage offsets.
        let mut offsets = Vec::new();
        for i in 0..size[0] {
            for j in 0..size[1] {
                offsets.push(i * stride[0] + j * stride[1]);
            }
        }
        let ordered = offsets.windows(2).all(|w| w[1] == w[0] + 1);
        let y = 96.0 + 3.0 * cell.1 + 30.0; // under the tallest grid
        s.text(ox, y, "row by row it reads offsets", 12.0, "start", INK);
        let list: Vec<String> = offsets.iter().map(|o| o.to_string()).collect();
        let ink = if ordered { INK } else { ORANGE };
        s.bold(ox, y + 18.0, &list.join(" "), 14.0, "start");
        // Asked of libtorch, not deduced: does view([6]) work on it?
        let verdict = match (contiguous, x.f_view([6]).is_ok()) {
            (true, true) => "in order: contiguous, view([6]) works",
            (false, false) => "jumps: not contiguous, view([6]) fails",
            _ => "contiguity and view disagree?",
        };
        s.text(ox, y + 38.0, verdict, 12.0, "start", ink);
        // The storage underneath, as libtorch holds it.
        let data: Vec<i64> =
            Vec::try_from(&x.contiguous().view([-1])).expect("i64");
        let storage: Vec<i64> = if n == 3 { data } else { (0..6).collect() };
        s.text(ox, 300.0, &format!("storage: {kept}"), 12.0, "start", INK);
        let row =
            vec![storage.iter().map(|v| v.to_string()).collect::<Vec<_>>()];
        s.grid((ox, 310.0), (32.0, 26.0), &row, |_, _| {
            ("#e8f0fa".to_string(), INK)
        });
        for k in 0..6 {
            s.text(
                ox + 16.0 + k as f64 * 32.0,
                352.0,
                &format!("{k}"),
                10.0,
                "middle",
                GREY,
            );
        }
    }
    s.text(
        20.0,
        372.0,
        "grey: offsets into the storage",
        10.0,
        "start",
        GREY,
    );
    s.finish()
}

// ---- chapter 03: GELU against ReLU ------------------------------------------------------

fn gelu_relu() -> anyhow::Result<String> {
    let x = Tensor::linspace(-4.0, 3.0, 281, (Kind::Float, Device::Cpu));
    let curve = |y: &Tensor| -> Vec<(f64, f64)> {
        let xs = Vec::<f64>::try_from(&x.to_kind(Kind::Double)).expect("xs");
        let ys = Vec::<f64>::try_from(&y.to_kind(Kind::Double)).expect("ys");
        xs.into_iter().zip(ys).collect()
    };
    let gelu = curve(&x.gelu("none"));
    let relu = curve(&x.relu());
    let low = gelu.iter().copied().fold((0.0, f64::MAX), |a, p| {
        if p.1 < a.1 {
            p
        } else {
            a
        }
    });
    println!(
        "03_gelu_relu: GELU's minimum {:.3} at x = {:.3}",
        low.1, low.0
    );
    let chart = LineChart {
        title: "GELU (the course's activation) against ReLU",
        x_desc: "x",
        y_desc: "activation(x)",
        series: vec![
            ("ReLU: max(0, x)".into(), relu),
            ("GELU: x·Φ(x), exact erf form".into(), gelu),
        ],
        log_y: false,
        dots: false,
        mark: Some((
            low.0,
            low.1,
            format!("  minimum {:.2} at x = {:.2}", low.1, low.0),
        )),
    };
    let svg = line_chart(Format::Svg, &chart)?;
    Ok(String::from_utf8(svg)?)
}

// ---- chapter 05: the decoder layer ------------------------------------------------------

fn decoder_layer() -> String {
    let cfg = TransformerConfig::reverse_task();
    let (d, h, ff) = (cfg.d_model, cfg.num_heads, cfg.d_ff);
    let mut s = Svg::new(900.0, 760.0);
    s.bold(
        450.0,
        26.0,
        "One decoder layer (pre-norm, as in src/decoder.rs)",
        17.0,
        "middle",
    );
    let stream = 150.0; // x of the residual stream
    let (bx, bw) = (240.0, 270.0); // the sublayer boxes
    let cx = bx + bw / 2.0;
    s.text(
        stream,
        56.0,
        &format!("x  [B, Lt, {d}]"),
        13.0,
        "middle",
        INK,
    );
    s.text(
        stream,
        72.0,
        "decoder input: embeddings + positions",
        11.0,
        "middle",
        GREY,
    );
    // The residual stream with its three additions.
    let plus = [250.0, 450.0, 650.0];
    s.line((stream, 80.0), (stream, plus[0] - 12.0), INK, true);
    s.line(
        (stream, plus[0] + 12.0),
        (stream, plus[1] - 12.0),
        INK,
        true,
    );
    s.line(
        (stream, plus[1] + 12.0),
        (stream, plus[2] - 12.0),
        INK,
        true,
    );
    s.line((stream, plus[2] + 12.0), (stream, 720.0), INK, true);
    s.text(stream, 740.0, &format!("to the next layer  [B, Lt, {d}]  (after the last: ln_final, out_proj)"), 12.0, "start", INK);
    for y in plus {
        let _ = writeln!(
            s.body,
            r#"<circle cx="{stream}" cy="{y}" r="12" fill="white" stroke="{INK}" stroke-width="1.5"/>"#
        );
        s.text(stream, y + 6.0, "+", 18.0, "middle", INK);
    }
    s.text(stream - 18.0, 160.0, "residual", 11.0, "end", GREY);
    // Each sublayer: LN, then the block, then back into the stream.
    let ffn = format!("{d} → {ff} → {d}, GELU");
    let subs = [
        (
            95.0,
            "ln1",
            "masked self-attention",
            "Q, K, V from the decoder",
            "#fde8d7",
        ),
        (
            295.0,
            "ln2",
            "cross-attention",
            "Q from the decoder; K, V from memory",
            "#dbeafe",
        ),
        (495.0, "ln3", "feed-forward", ffn.as_str(), "#e6f4ea"),
    ];
    for (k, (y, ln, name, what, colour)) in subs.iter().enumerate() {
        s.path(&[(stream, *y), (cx, *y), (cx, y + 12.0)], INK, false);
        s.round_rect(bx + 60.0, y + 14.0, bw - 120.0, 30.0, "#f4f4f4");
        s.text(cx, y + 34.0, ln, 13.0, "middle", INK);
        s.line((cx, y + 44.0), (cx, y + 62.0), INK, true);
        s.round_rect(bx, y + 64.0, bw, 52.0, colour);
        s.bold(cx, y + 86.0, name, 14.0, "middle");
        s.text(cx, y + 104.0, what, 11.0, "middle", INK);
        let back = plus[k];
        s.path(
            &[(cx, y + 116.0), (cx, back), (stream + 14.0, back)],
            INK,
            false,
        );
    }
    // Masks and memory, entering from the right: (top, colour, title, note,
    // the arrow's path into the block).
    let side = 560.0;
    let memory = format!("memory  [B, Ls, {d}]");
    let inputs = [
        (
            150.0,
            "#fff8e1",
            "target mask  [B, 1, Lt, Lt]".to_string(),
            "causal (no future) OR target padding",
            vec![(side, 178.0), (bx + bw + 4.0, 178.0)],
            ORANGE,
        ),
        (
            250.0,
            "#dbeafe",
            memory,
            "the encoder's output, the same for every step",
            vec![
                (side, 280.0),
                (bx + bw - 30.0, 280.0),
                (bx + bw - 30.0, 357.0),
            ],
            BLUE,
        ),
        (
            330.0,
            "#fff8e1",
            "source mask  [B, 1, 1, Ls]".to_string(),
            "source padding only: every step sees all",
            vec![(side, 362.0), (bx + bw + 4.0, 362.0)],
            ORANGE,
        ),
    ];
    for (top, colour, title, note, arrow, ink) in &inputs {
        s.round_rect(side, *top, 300.0, 56.0, colour);
        s.bold(side + 150.0, top + 22.0, title, 12.0, "middle");
        s.text(side + 150.0, top + 42.0, note, 11.0, "middle", INK);
        s.path(arrow, ink, false);
    }
    s.text(
        side + 150.0,
        430.0,
        &format!("{h} heads of d_k = {} in both attentions", d / h),
        11.0,
        "middle",
        GREY,
    );
    s.finish()
}

// ---- chapter 07: what the diagonal-0 mutant does to attention ----------------------------

/// The untrained model of chapter 07, decoder self-attention (layer 0, head 0)
/// under the correct mask and the two mutants.
fn diagonal_0_mutant() -> anyhow::Result<String> {
    tch::manual_seed(0); // chapter 07's model
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let model = Transformer::new(vs.root(), cfg)?;
    let src = Tensor::from_slice(&[3i64, 4, 5, 2, 0, 0]).view([1, 6]);
    let tgt = Tensor::from_slice(&[1i64, 5, 4, 3, 2]).view([1, 5]);
    let labels: Vec<String> = tokens_to_words(&[1, 5, 4, 3, 2])
        .split(' ')
        .enumerate()
        .map(|(i, w)| format!("{i}:{w}"))
        .collect();
    let mut panels = Vec::new();
    for (name, mask_fn) in CAUSAL_MASKS {
        let weights = tch::no_grad(|| {
            let src_mask = make_padding_mask(&src);
            let (memory, _) =
                model.encoder.forward_with_weights(&src, &src_mask, false);
            let (_, w) = model
                .decode_with_weights(&tgt, &memory, &src_mask, mask_fn, false);
            w[0].self_attn.get(0).get(0) // [Lt, Lt]
        });
        let matrix = rows_of(&weights);
        let row0: Vec<String> =
            matrix[0].iter().map(|w| format!("{w:.2}")).collect();
        let title = name.replace("mutation: ", "mutant: ").replace(
            "make_causal_mask (triu, diagonal=1)",
            "correct: triu with diagonal=1",
        );
        // The panel's short title: the mask's full name made the line too wide.
        println!("07_diagonal_0_mutant: {title}: row 0 = {}", row0.join(" "));
        panels.push(Panel {
            title,
            matrix,
            row_labels: labels.clone(),
            col_labels: labels.clone(),
        });
    }
    let fig = Figure::weights(
        "Decoder self-attention of chapter 07's model (layer 0, head 0) under three masks",
        3,
        true,
        ("key (position:token)", "query"),
    );
    Ok(String::from_utf8(heatmaps(Format::Svg, &fig, &panels)?)?)
}

// ---- chapter 09: the teacher-forcing shift ------------------------------------------------

fn teacher_forcing_shift() -> String {
    let digits = [7, 3, 0, 9, 5];
    let (_, tgt) = encode_pair(&digits);
    let tgt_t = Tensor::from_slice(&tgt).view([1, -1]);
    let (dec_in, labels) = teacher_forcing(&tgt_t);
    let words = |t: &Tensor| -> Vec<String> {
        let ids = Vec::<i64>::try_from(&t.view([-1])).expect("ids");
        ids.iter().map(|&i| tokens_to_words(&[i])).collect()
    };
    let (tgt_w, in_w, lab_w) = (words(&tgt_t), words(&dec_in), words(&labels));
    let pad_labels = lab_w.iter().filter(|w| *w == "<pad>").count();
    println!(
        "09_teacher_forcing: {} positions, {pad_labels} of them PAD labels",
        lab_w.len()
    );
    let (cw, ch, x0) = (60.0, 32.0, 190.0);
    let mut s = Svg::new(x0 + 14.0 * cw + 20.0, 325.0);
    s.bold(
        (x0 + 14.0 * cw) / 2.0,
        26.0,
        "Teacher forcing: the decoder reads tgt[:, :-1] and is asked for tgt[:, 1:]",
        17.0,
        "middle",
    );
    let row = |s: &mut Svg,
               y: f64,
               shift: f64,
               cells: &[String],
               label: &str,
               sub: &str| {
        s.bold(x0 - 12.0, y + 14.0, label, 13.0, "end");
        s.text(x0 - 12.0, y + 30.0, sub, 11.0, "end", GREY);
        for (j, w) in cells.iter().enumerate() {
            let pad = w == "<pad>";
            let (bg, ink) = if pad {
                ("#eeeeee", GREY)
            } else {
                ("#e8f0fa", INK)
            };
            let x = x0 + (j as f64 + shift) * cw;
            s.rect(x, y, cw, ch, bg, if pad { "#c8c8c8" } else { "#606060" });
            s.text(x + cw / 2.0, y + 21.0, w, 13.0, "middle", ink);
        }
    };
    for j in 0..13 {
        s.text(
            x0 + j as f64 * cw + cw / 2.0,
            64.0,
            &format!("{j}"),
            11.0,
            "middle",
            GREY,
        );
    }
    s.text(x0 - 12.0, 64.0, "position", 11.0, "end", GREY);
    row(&mut s, 76.0, 0.0, &in_w, "decoder input", "tgt[:, :-1]");
    row(&mut s, 166.0, 0.0, &tgt_w, "target row", "tgt, 14 tokens");
    row(&mut s, 256.0, 0.0, &lab_w, "labels", "tgt[:, 1:]");
    // The input drops the last column; the labels drop the first, so every
    // token moves one position to the left.
    for j in 0..7 {
        let x = x0 + j as f64 * cw + cw / 2.0;
        s.line((x, 164.0), (x, 112.0), GREY, true);
        if j > 0 {
            s.line((x, 200.0), (x - cw + 6.0, 252.0), BLUE, true);
        }
    }
    s.text(
        x0 + 7.3 * cw,
        140.0,
        "the same positions, minus the last",
        12.0,
        "start",
        GREY,
    );
    s.text(
        x0 + 7.3 * cw,
        232.0,
        "one position to the left: at position t the label is the token t + 1",
        12.0,
        "start",
        BLUE,
    );
    let first_pad = lab_w.iter().position(|w| w == "<pad>").unwrap_or(13);
    s.text(
        x0 + first_pad as f64 * cw,
        310.0,
        &format!("grey: {pad_labels} PAD labels, ignored by the loss (ignore_index = PAD_ID)"),
        12.0,
        "start",
        GREY,
    );
    s.finish()
}

// ---- chapter 09: fp32, TF32, bf16 and fp16 --------------------------------------------------

/// The bits of 1/3 in each format, read back from libtorch's own conversions
/// (TF32 is not a storage type: it is fp32 rounded to 10 mantissa bits inside
/// the matrix units, done here by hand).
fn float_formats() -> String {
    let x = 1.0f32 / 3.0;
    let bits16 = |kind: Kind| -> (u32, f64) {
        let t = Tensor::from_slice(&[x]).to_kind(kind);
        let raw =
            i16::try_from(&t.view_dtype(Kind::Int16).get(0)).expect("16 bits");
        (
            raw as u16 as u32,
            t.to_kind(Kind::Double).double_value(&[0]),
        )
    };
    let fp32 = x.to_bits();
    // Round to nearest even at mantissa bit 13.
    let tf32 = {
        let keep = 13;
        let half = 1u32 << (keep - 1);
        let odd = (fp32 >> keep) & 1;
        ((fp32 + half - 1 + odd) >> keep) << keep
    };
    let (bf16, bf16_v) = bits16(Kind::BFloat16);
    let (fp16, fp16_v) = bits16(Kind::Half);
    // name, bits, total width, exponent bits, mantissa bits shown, value
    let rows = [
        (
            "fp32",
            fp32,
            32,
            8,
            23,
            x as f64,
            "24 bits of precision, the default",
        ),
        (
            "TF32",
            tf32,
            32,
            8,
            10,
            f32::from_bits(tf32) as f64,
            "fp32 inside NVIDIA matrix units",
        ),
        (
            "bf16",
            bf16,
            16,
            8,
            7,
            bf16_v,
            "fp32's range, 8 bits of precision",
        ),
        (
            "fp16",
            fp16,
            16,
            5,
            10,
            fp16_v,
            "11 bits of precision, largest 65504",
        ),
    ];
    let cw = 22.0;
    let x0 = 110.0;
    let mut s =
        Svg::new(x0 + 32.0 * cw + 250.0, 120.0 + rows.len() as f64 * 78.0);
    s.bold(
        s.w / 2.0,
        26.0,
        "1/3 in four float formats: sign, exponent, mantissa",
        17.0,
        "middle",
    );
    for (r, (name, bits, width, exp, mant, value, note)) in
        rows.iter().enumerate()
    {
        let y = 70.0 + r as f64 * 78.0;
        s.bold(x0 - 12.0, y + 20.0, name, 15.0, "end");
        println!(
            "09_float_formats: {name}: {bits:0width$b} = {value:.7}",
            width = *width as usize
        );
        for i in 0..*width {
            let bit = (bits >> (width - 1 - i)) & 1;
            let (bg, ink) = if i == 0 {
                ("#fde2e2", INK)
            } else if i <= *exp {
                ("#e3f4e1", INK)
            } else if i <= exp + mant {
                ("#dbeafe", INK)
            } else {
                ("#f0f0f0", GREY) // TF32: the 13 bits the matrix unit drops
            };
            let x = x0 + i as f64 * cw;
            s.rect(x, y, cw, 30.0, bg, "#808080");
            s.text(
                x + cw / 2.0,
                y + 20.0,
                &bit.to_string(),
                13.0,
                "middle",
                ink,
            );
        }
        let dropped = width - 1 - exp - mant;
        let parts = if dropped > 0 {
            format!("1 sign · {exp} exponent · {mant} mantissa (grey: {dropped} bits ignored)")
        } else {
            format!("1 sign · {exp} exponent · {mant} mantissa")
        };
        s.text(x0, y + 48.0, &parts, 11.0, "start", INK);
        let right = x0 + 32.0 * cw + 16.0;
        s.bold(right, y + 14.0, &format!("= {value:.7}"), 14.0, "start");
        s.text(right, y + 32.0, note, 11.0, "start", GREY);
    }
    let y = 80.0 + rows.len() as f64 * 78.0;
    s.text(x0, y, "red: sign · green: exponent (the range) · blue: mantissa (the precision)", 12.0, "start", INK);
    s.finish()
}

// ---- chapter 10: a KV cache growing ---------------------------------------------------------

fn kv_cache() -> String {
    let cfg = TransformerConfig::reverse_task();
    let (h, d_k) = (cfg.num_heads, cfg.d_model / cfg.num_heads);
    let digits = [7i64, 3, 0, 9, 5];
    let (src, tgt) = encode_pair(&digits);
    let ls = src.iter().filter(|&&t| t != 0).count();
    let tokens: Vec<String> = tgt
        .iter()
        .take(digits.len() + 1)
        .map(|&t| tokens_to_words(&[t]))
        .collect();
    let steps = 4;
    let (cw, ch, x0) = (58.0, 30.0, 170.0);
    let mut s = Svg::new(1000.0, 120.0 + steps as f64 * 84.0 + 40.0);
    s.bold(500.0, 26.0, "A KV cache while decoding 7 3 0 9 5: each step computes one new column", 17.0, "middle");
    s.text(
        500.0,
        48.0,
        &format!("cross-attention's K and V come from memory [1, {h}, {ls}, {d_k}]: projected once, before step 1"),
        12.0,
        "middle",
        INK,
    );
    for t in 1..=steps {
        let y = 80.0 + (t - 1) as f64 * 84.0;
        s.bold(x0 - 14.0, y + 14.0, &format!("step {t}"), 14.0, "end");
        s.text(
            x0 - 14.0,
            y + 32.0,
            &format!("feeds {}", tokens[t - 1]),
            11.0,
            "end",
            INK,
        );
        for (row, name) in ["K", "V"].iter().enumerate() {
            let yy = y + row as f64 * ch;
            s.text(
                x0 + 4.0 + steps as f64 * cw + 8.0,
                yy + 20.0,
                name,
                12.0,
                "start",
                GREY,
            );
            for (j, token) in tokens.iter().enumerate().take(t) {
                let new = j == t - 1;
                let (bg, ink) = if new {
                    ("#fbd5b5", INK)
                } else {
                    ("#dbeafe", INK)
                };
                let x = x0 + j as f64 * cw;
                s.rect(x, yy, cw, ch, bg, "#606060");
                s.text(x + cw / 2.0, yy + 20.0, token, 12.0, "middle", ink);
            }
        }
        let info = x0 + steps as f64 * cw + 50.0;
        s.text(
            info,
            y + 16.0,
            &format!("cache per layer: [1, {h}, {t}, {d_k}]"),
            12.0,
            "start",
            INK,
        );
        s.text(
            info,
            y + 34.0,
            &format!(
                "scores: 1 query × {t} key{} (without a cache: {t} × {t}, all recomputed)",
                if t == 1 { "" } else { "s" }
            ),
            12.0,
            "start",
            INK,
        );
    }
    let y = 80.0 + steps as f64 * 84.0 + 10.0;
    s.rect(x0, y, 16.0, 14.0, "#dbeafe", "#606060");
    s.text(
        x0 + 22.0,
        y + 12.0,
        "kept from earlier steps",
        12.0,
        "start",
        INK,
    );
    s.rect(x0 + 200.0, y, 16.0, 14.0, "#fbd5b5", "#606060");
    s.text(
        x0 + 222.0,
        y + 12.0,
        "computed this step, from the newest token only",
        12.0,
        "start",
        INK,
    );
    s.finish()
}

// ---- chapter 12: FlashAttention's tiling and its running (m, ℓ, acc) ---------------------------

/// One tile step of the online softmax: (tile, its keys, m, ℓ, acc, rescale).
type TileStep = (usize, std::ops::Range<usize>, f64, f64, f64, f64);

/// FlashAttention's recurrence for one query row, `block` keys at a time.
fn online_softmax(s_row: &[f64], v_col: &[f64], block: usize) -> Vec<TileStep> {
    let (mut m, mut l, mut acc) = (f64::NEG_INFINITY, 0.0, 0.0);
    let mut steps = Vec::new();
    for b in 0..s_row.len() / block {
        let keys = b * block..(b + 1) * block;
        let m_new = keys.clone().map(|j| s_row[j]).fold(m, f64::max);
        let rescale = (m - m_new).exp(); // the old sums were measured against m
        let e = |j: usize| (s_row[j] - m_new).exp();
        l = l * rescale + keys.clone().map(e).sum::<f64>();
        acc =
            acc * rescale + keys.clone().map(|j| e(j) * v_col[j]).sum::<f64>();
        m = m_new;
        steps.push((b, keys, m, l, acc, rescale));
    }
    steps
}

fn flash_tiling() -> String {
    const L: i64 = 8;
    const BLOCK: usize = 2;
    // The first seed whose row raises its running maximum in two later tiles,
    // so that the rescaling has something to do.
    let mut seed = 0;
    let (s_row, reference, steps) = loop {
        tch::manual_seed(seed);
        let q = Tensor::randn([1, 4], (Kind::Float, Device::Cpu));
        let k = Tensor::randn([L, 4], (Kind::Float, Device::Cpu));
        let v = Tensor::randn([L, 1], (Kind::Float, Device::Cpu));
        let scores = q.matmul(&k.tr()) / 2.0; // the last query row, √d_k = 2
        let reference = scores
            .softmax(-1, Kind::Float)
            .matmul(&v)
            .double_value(&[0, 0]);
        let s_row: Vec<f64> = rows_of(&scores)[0].clone();
        let v_col: Vec<f64> = rows_of(&v.tr())[0].clone();
        let steps = online_softmax(&s_row, &v_col, BLOCK);
        let raised = steps.iter().skip(1).filter(|st| st.5 < 1.0).count();
        if raised >= 2 || seed == 100 {
            break (s_row, reference, steps);
        }
        seed += 1;
    };
    let (.., l, acc, _) = steps.last().cloned().expect("at least one tile");
    println!(
        "12_flash_tiling: seed {seed}: acc/ℓ = {:.6}, softmax(s)·v = {reference:.6}",
        acc / l
    );

    let mut s = Svg::new(1000.0, 470.0);
    s.bold(
        500.0,
        26.0,
        "FlashAttention: tiles of the score matrix, never the whole of it",
        17.0,
        "middle",
    );
    // Left: the L×L score matrix in 4×4 tiles; causal tiles above the diagonal skipped.
    let (gx, gy, c) = (40.0, 80.0, 34.0);
    let nb = L as usize / BLOCK;
    for bi in 0..nb {
        for bj in 0..nb {
            let (x, y) =
                (gx + (bj * BLOCK) as f64 * c, gy + (bi * BLOCK) as f64 * c);
            let size = BLOCK as f64 * c;
            let (fill, stroke) = if bj > bi {
                ("#eeeeee", "#c8c8c8")
            } else if bi == nb - 1 {
                ("#dbeafe", INK)
            } else {
                ("#f8f8f8", "#909090")
            };
            s.rect(x, y, size, size, fill, stroke);
            if bj > bi {
                s.text(
                    x + size / 2.0,
                    y + size / 2.0 + 4.0,
                    "skip",
                    11.0,
                    "middle",
                    GREY,
                );
            } else if bi == nb - 1 {
                s.text(
                    x + size / 2.0,
                    y + size / 4.0 + 4.0,
                    &format!("step {}", bj + 1),
                    11.0,
                    "middle",
                    INK,
                );
            }
        }
    }
    let side = L as f64 * c;
    s.text(
        gx + side / 2.0,
        gy - 10.0,
        &format!("keys (blocks of {BLOCK})"),
        12.0,
        "middle",
        INK,
    );
    s.text(
        gx + side / 2.0,
        gy + side + 22.0,
        &format!("scores, {L} × {L}, causal: grey tiles are never computed"),
        11.0,
        "middle",
        INK,
    );
    s.path(
        &[(gx, gy + side + 40.0), (gx + side, gy + side + 40.0)],
        BLUE,
        false,
    );
    s.text(
        gx + side / 2.0,
        gy + side + 58.0,
        "the last query block walks its row of tiles",
        11.0,
        "middle",
        BLUE,
    );
    let _ = writeln!(
        s.body,
        r#"<rect x="{gx}" y="{:.1}" width="{side}" height="{c}" fill="none" stroke="{ORANGE}" stroke-width="3"/>"#,
        gy + side - c
    );
    s.text(
        gx + side + 8.0,
        gy + side - c / 2.0 + 4.0,
        "row 7",
        12.0,
        "start",
        ORANGE,
    );
    // Right: the running statistics of row 7, with its real numbers.
    let tx = 400.0;
    s.bold(
        tx,
        80.0,
        "Row 7, one tile at a time (real numbers, d_k = 4, v of width 1)",
        13.0,
        "start",
    );
    let head = ["step", "keys", "scores s", "m", "rescale", "ℓ", "acc"];
    let cols = [0.0, 50.0, 110.0, 250.0, 320.0, 400.0, 470.0];
    for (h, x) in head.iter().zip(cols) {
        s.bold(tx + x, 110.0, h, 12.0, "start");
    }
    for (r, (b, block, m, l, acc, rescale)) in steps.iter().enumerate() {
        let y = 136.0 + r as f64 * 26.0;
        let keys = format!("{}–{}", block.start, block.end - 1);
        let sc: Vec<String> =
            block.clone().map(|j| format!("{:.2}", s_row[j])).collect();
        let cells = [
            format!("{}", b + 1),
            keys,
            sc.join("  "),
            format!("{m:.3}"),
            if r == 0 {
                "–".to_string()
            } else {
                format!("{rescale:.3}")
            },
            format!("{l:.3}"),
            format!("{acc:.3}"),
        ];
        for (cell, x) in cells.iter().zip(cols) {
            s.text(tx + x, y, cell, 12.0, "start", INK);
        }
    }
    let y = 136.0 + steps.len() as f64 * 26.0 + 20.0;
    let lines = [
        "m: the largest score so far. When a tile raises it, the sums so far were",
        "measured against the old m, so they are multiplied by rescale = e^(m_old − m_new).",
        "ℓ: Σ e^(s − m) over the keys so far · acc: Σ e^(s − m) · v over the keys so far.",
    ];
    for (i, line) in lines.iter().enumerate() {
        s.text(tx, y + i as f64 * 18.0, line, 12.0, "start", INK);
    }
    s.bold(
        tx,
        y + 70.0,
        &format!(
            "acc / ℓ = {:.6} · softmax(s) · v in one piece = {reference:.6}",
            acc / l
        ),
        13.0,
        "start",
    );
    s.text(
        tx,
        y + 92.0,
        "Only one tile of scores exists at a time: memory O(L), not O(L²).",
        12.0,
        "start",
        INK,
    );
    s.finish()
}
