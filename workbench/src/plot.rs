//! All the drawing, with plotters: training curves (chapter 09), heatmaps (chapter
//! 11) and the sweep of chapter 12. Every figure goes through
//! `output::write_atomic`, as .svg or .png by its extension.
//!
//! Text is rendered with the DejaVu Sans font bundled in `src/assets`, so plots
//! look the same on every machine and need no system fonts.
use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, bail, ensure, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use tch::{Device, Kind};
use transformer_course::data::ReverseDataset;
use transformer_course::dates::{Sample, TGT_LEN};
use transformer_course::sdpa::{Measurement, SweepRow};
use transformer_course::transformer::Transformer;
use transformer_course::viz::every_weight;

/// Renders a figure for `path` (SVG or PNG by its extension) and writes it
/// atomically.
pub fn save(
    path: &Path,
    render: impl FnOnce(Format) -> Result<Vec<u8>>,
) -> Result<()> {
    let bytes = render(Format::of(path)?)?;
    crate::output::write_bytes_atomic(path, &bytes)
}

/// Registers the bundled font as plotters' "sans-serif" (once per process).
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("assets/DejaVuSans.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| ())
            .expect("the bundled DejaVu Sans is a valid font");
    });
}

/// The two formats a figure can be written in, chosen by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    pub fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => {
                bail!("{}: figures are written as .svg or .png", path.display())
            }
        }
    }
}

/// clap value parser for a figure's path: it must end in .svg or .png.
pub fn parse_figure_path(
    s: &str,
) -> std::result::Result<std::path::PathBuf, String> {
    let path = std::path::PathBuf::from(s);
    Format::of(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Draws with `$draw(&root, args…)` and returns the file's bytes in `$format`.
macro_rules! render {
    ($format:expr, $size:expr, $draw:ident($($arg:expr),*)) => {{
        register_fonts();
        let size: (u32, u32) = $size;
        match $format {
            Format::Svg => {
                let mut svg = String::new();
                {
                    let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                    $draw(&root, $($arg),*)?;
                    root.present().map_err(|e| anyhow!("{e}"))?;
                }
                Ok::<Vec<u8>, anyhow::Error>(svg.into_bytes())
            }
            Format::Png => {
                let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
                {
                    let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                    $draw(&root, $($arg),*)?;
                    root.present().map_err(|e| anyhow!("{e}"))?;
                }
                png_bytes(rgb, size)
            }
        }
    }};
}

fn png_bytes(rgb: Vec<u8>, (w, h): (u32, u32)) -> Result<Vec<u8>> {
    let img = image::RgbImage::from_raw(w, h, rgb)
        .ok_or_else(|| anyhow!("bad image size"))?;
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageOutputFormat::Png)?;
    Ok(out.into_inner())
}

/// Turns a plotters drawing error into anyhow's.
fn de<E: std::error::Error + Send + Sync + 'static>(
    e: DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("drawing failed: {e}")
}

/// Validation exact match per epoch, one line per run.
pub fn exact_match_plot(
    format: Format,
    runs: &[(String, Vec<f64>)],
) -> Result<Vec<u8>> {
    let series = runs
        .iter()
        .map(|(label, values)| {
            let pts = values.iter().enumerate();
            (
                label.clone(),
                pts.map(|(e, &v)| (e as f64 + 1.0, v)).collect(),
            )
        })
        .collect();
    let chart = LineChart {
        title: "Validation exact match per epoch",
        x_desc: "epoch",
        y_desc: "exact match (greedy, 500 samples)",
        series,
        log_y: false,
        dots: true,
        mark: None,
    };
    line_chart(format, &chart)
}

/// Chapter 12's sweep on log-log axes: time per call (left) and peak memory (right)
/// against sequence length, for both attention paths.
pub fn sweep_plot(
    format: Format,
    rows: &[SweepRow],
    subtitle: &str,
) -> Result<Vec<u8>> {
    render!(format, (960, 420), draw_sweep(rows, subtitle))
}

fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rows: &[SweepRow],
    subtitle: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(de)?;
    let title = format!("Hand-written attention vs SDPA ({subtitle})");
    let root = root.titled(&title, ("sans-serif", 18)).map_err(de)?;
    let (left, right) = root.split_horizontally(480);
    type Pick = fn(&SweepRow) -> Option<Measurement>;
    let paths: [(&str, Pick, usize); 2] = [
        ("hand-written", |r| r.manual, 1),
        ("SDPA (fused)", |r| r.sdpa, 3),
    ];
    type Value = fn(Measurement) -> Option<f64>;
    let panels: [(&DrawingArea<DB, Shift>, &str, Value); 2] = [
        (&left, "ms per call", |m| Some(m.ms)),
        // Readings under 1 MiB are below what the measurement resolves; leave
        // them out.
        (&right, "peak memory (MiB)", |m| {
            m.peak_bytes
                .map(|b| b as f64 / (1u64 << 20) as f64)
                .filter(|&mib| mib >= 1.0)
        }),
    ];
    let lens: Vec<f64> = rows.iter().map(|r| r.len as f64).collect();
    let (x0, x1) = (
        lens.first().copied().unwrap_or(128.0) / 1.3,
        lens.last().copied().unwrap_or(2048.0) * 1.3,
    );
    for (area, y_desc, value) in panels {
        let ys: Vec<f64> = rows
            .iter()
            .flat_map(|r| {
                paths.iter().filter_map(move |p| p.1(r).and_then(value))
            })
            .collect();
        let (y0, y1) = ys
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
        let (y0, y1) = if ys.is_empty() {
            (0.1, 10.0)
        } else {
            (y0 / 2.0, y1 * 2.0)
        };
        let mut chart = ChartBuilder::on(area)
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(de)?;
        // Label only 1-2-5 steps (100, 200, 500, 1000, …), or the log axis
        // crowds its labels.
        let one_two_five = |x: &f64| {
            let lead = x / 10f64.powf(x.log10().floor());
            if [1.0, 2.0, 5.0].iter().any(|d| (lead - d).abs() < 1e-6) {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc("sequence length L")
            .y_desc(y_desc)
            .x_label_formatter(&one_two_five)
            .y_label_formatter(&|y| format!("{y}"))
            .draw()
            .map_err(de)?;
        for (label, pick, color) in paths {
            let color = Palette99::pick(color).to_rgba();
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .filter_map(|r| Some((r.len as f64, value(pick(r)?)?)))
                .collect();
            chart
                .draw_series(LineSeries::new(
                    pts.clone(),
                    color.stroke_width(3),
                ))
                .map_err(de)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(
                        vec![(x, y), (x + 20, y)],
                        color.stroke_width(3),
                    )
                });
            chart
                .draw_series(
                    pts.iter().map(|&p| Circle::new(p, 4, color.filled())),
                )
                .map_err(de)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()
            .map_err(de)?;
    }
    Ok(())
}

/// One heatmap of a figure.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub matrix: Vec<Vec<f64>>,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
}

/// How a grid of heatmaps is laid out, labelled and coloured.
#[derive(Debug, Clone, Copy)]
pub struct Figure<'a> {
    pub title: &'a str,
    /// Panels per row of the grid.
    pub columns: usize,
    /// Write each value into its cell.
    pub values: bool,
    /// Descriptions of the x and y axes.
    pub axes: (&'a str, &'a str),
    /// Width and height of a cell in pixels.
    pub cell: (u32, u32),
    /// The values at the two ends of the colour bar. A range that starts below 0
    /// is drawn red–white–blue, others white to blue.
    pub range: (f64, f64),
    /// Decimals of the numbers in the cells and on the colour bar.
    pub decimals: usize,
}

impl<'a> Figure<'a> {
    /// Attention weights: values from 0 to 1, square cells sized for the values.
    pub fn weights(
        title: &'a str,
        columns: usize,
        values: bool,
        axes: (&'a str, &'a str),
    ) -> Self {
        let side = if values { 52 } else { 22 };
        Figure {
            title,
            columns,
            values,
            axes,
            cell: (side, side),
            range: (0.0, 1.0),
            decimals: 2,
        }
    }

    /// A cell's number; signed where the scale runs through 0, never "-0.00".
    fn label(&self, v: f64) -> String {
        let d = self.decimals;
        let text = format!("{v:.d$}");
        if text.trim_start_matches(['-', '0', '.']).is_empty() {
            text.trim_start_matches('-').to_string()
        } else if self.range.0 < 0.0 {
            format!("{v:+.d$}")
        } else {
            text
        }
    }

    /// Whether a cell is dark enough to need white text.
    fn dark(&self, v: f64) -> bool {
        let (lo, hi) = self.range;
        let t = (v - lo) / (hi - lo);
        if lo < 0.0 {
            (2.0 * t - 1.0).abs() > 0.5
        } else {
            t > 0.5
        }
    }

    fn colour(&self, v: f64) -> RGBColor {
        let (lo, hi) = self.range;
        let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        let lerp = |a: (f64, f64, f64), b: (f64, f64, f64), t: f64| {
            let m = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
            RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
        };
        let white = (247.0, 251.0, 255.0);
        let blue = (8.0, 48.0, 107.0);
        if lo < 0.0 {
            let red = (103.0, 0.0, 31.0);
            if t < 0.5 {
                lerp(red, white, 2.0 * t)
            } else {
                lerp(white, blue, 2.0 * t - 1.0)
            }
        } else {
            lerp(white, blue, t) // like matplotlib's "Blues"
        }
    }
}

// ANCHOR: heatmap
/// Draws `panels` in a grid, sharing one colour bar.
pub fn heatmaps(
    format: Format,
    fig: &Figure,
    panels: &[Panel],
) -> Result<Vec<u8>> {
    ensure!(!panels.is_empty() && fig.columns > 0, "nothing to draw");
    let (rows_max, cols_max) = panels.iter().fold((0, 0), |(r, c), p| {
        (r.max(p.matrix.len()), c.max(p.matrix[0].len()))
    });
    let panel_w = 90 + cols_max as u32 * fig.cell.0;
    let panel_h = 70 + rows_max as u32 * fig.cell.1 + 40;
    let grid_rows = panels.len().div_ceil(fig.columns) as u32;
    // Tall enough for the colour bar (80 to 280) and its lowest label.
    let height = (grid_rows * panel_h + 60).max(300);
    let size = (fig.columns as u32 * panel_w + 110, height);
    let panel = (panel_w, panel_h);
    render!(format, size, draw_on(fig, panels, panel))
}
// ANCHOR_END: heatmap

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
    panels: &[Panel],
    panel: (u32, u32),
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = de::<DB::ErrorType>;
    let (cw, ch) = (fig.cell.0 as i32, fig.cell.1 as i32);
    root.fill(&WHITE).map_err(err)?;
    let center = Pos::new(HPos::Center, VPos::Center);
    let text = |s: String, at: (i32, i32), size: u32, pos: Pos| {
        Text::new(
            s,
            at,
            ("sans-serif", size).into_font().color(&BLACK).pos(pos),
        )
    };
    let mid = ((root.dim_in_pixel().0 / 2) as i32, 22);
    root.draw(&text(fig.title.to_string(), mid, 20, center))
        .map_err(err)?;
    let small = if fig.values { 14 } else { 11 };
    for (k, p) in panels.iter().enumerate() {
        let ox = (k % fig.columns) as i32 * panel.0 as i32 + 70;
        let oy = (k / fig.columns) as i32 * panel.1 as i32 + 80;
        let (width, height) =
            (cw * p.col_labels.len() as i32, ch * p.matrix.len() as i32);
        root.draw(&text(
            p.title.clone(),
            (ox + width / 2, oy - 18),
            14,
            center,
        ))
        .map_err(err)?;
        for (i, r) in p.matrix.iter().enumerate() {
            for (j, &v) in r.iter().enumerate() {
                let (x, y) = (ox + j as i32 * cw, oy + i as i32 * ch);
                let rect = Rectangle::new(
                    [(x, y), (x + cw, y + ch)],
                    fig.colour(v).filled(),
                );
                root.draw(&rect).map_err(err)?;
                if fig.values {
                    let colour = if fig.dark(v) { WHITE } else { BLACK };
                    let style = ("sans-serif", small)
                        .into_font()
                        .color(&colour)
                        .pos(center);
                    let at = (x + cw / 2, y + ch / 2);
                    root.draw(&Text::new(fig.label(v), at, style))
                        .map_err(err)?;
                }
            }
        }
        let right = Pos::new(HPos::Right, VPos::Center);
        for (i, l) in p.row_labels.iter().enumerate() {
            let at = (ox - 6, oy + i as i32 * ch + ch / 2);
            root.draw(&text(l.clone(), at, small, right)).map_err(err)?;
        }
        for (j, l) in p.col_labels.iter().enumerate() {
            let at = (ox + j as i32 * cw + cw / 2, oy + height + 12);
            root.draw(&text(l.clone(), at, small, center))
                .map_err(err)?;
        }
        let x_desc = (ox + width / 2, oy + height + 32);
        root.draw(&text(fig.axes.0.to_string(), x_desc, 12, center))
            .map_err(err)?;
        let style = ("sans-serif", 12)
            .into_font()
            .transform(FontTransform::Rotate270)
            .color(&BLACK)
            .pos(center);
        let y_desc = (ox - 50, oy + height / 2);
        root.draw(&Text::new(fig.axes.1.to_string(), y_desc, style))
            .map_err(err)?;
    }
    // The colour bar, shared by every panel: low at the bottom, high at the top.
    let (w, _) = root.dim_in_pixel();
    let (bx, by, bh) = (w as i32 - 70, 80, 200);
    let (lo, hi) = fig.range;
    for s in 0..bh {
        let v = hi - (hi - lo) * s as f64 / bh as f64;
        let rect = Rectangle::new(
            [(bx, by + s), (bx + 18, by + s + 1)],
            fig.colour(v).filled(),
        );
        root.draw(&rect).map_err(err)?;
    }
    let frame =
        Rectangle::new([(bx, by), (bx + 18, by + bh)], BLACK.stroke_width(1));
    root.draw(&frame).map_err(err)?;
    let left = Pos::new(HPos::Left, VPos::Center);
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let y = by + ((1.0 - t) * bh as f64) as i32;
        let v = lo + (hi - lo) * t;
        root.draw(&text(fig.label(v), (bx + 24, y), 11, left))
            .map_err(err)?;
    }
    Ok(())
}

/// Chapter 14's figure: the cross-attention of one written date (`data` holds
/// that one sample), every head of every layer, a row per input piece and a
/// column per ISO character written. Input pieces are words, so they go down
/// the side, where a label of any length fits.
pub fn date_cross_attention(
    format: Format,
    model: &Transformer,
    sample: &Sample,
    data: &ReverseDataset,
) -> Result<Vec<u8>> {
    let device = model.device();
    let tgt_in = data.tgt.narrow(1, 0, TGT_LEN as i64 - 1);
    let (_, layers) = every_weight(
        model,
        &data.src.to_device(device),
        &tgt_in.to_device(device),
    );
    let iso = sample.date.iso();
    let (n_out, n_src) = (iso.len() as i64, sample.pieces.len() as i64 + 1);
    let mut row_labels = sample.pieces.clone();
    row_labels.push("<eos>".into());
    let col_labels: Vec<String> = iso.chars().map(String::from).collect();
    let mut panels = Vec::new();
    for (l, w) in layers.iter().enumerate() {
        // [h, out, src] → per head [src, out]: query row k wrote character k
        let w = w.cross_attn.get(0).narrow(1, 0, n_out).narrow(2, 0, n_src);
        let w = w
            .transpose(1, 2)
            .to_kind(Kind::Double)
            .to_device(Device::Cpu);
        for h in 0..w.size()[0] {
            let matrix = (0..n_src)
                .map(|i| Vec::<f64>::try_from(&w.get(h).get(i)))
                .collect::<Result<Vec<_>, _>>()?;
            panels.push(Panel {
                title: format!("layer {l} head {h}"),
                matrix,
                row_labels: row_labels.clone(),
                col_labels: col_labels.clone(),
            });
        }
    }
    let title = format!("cross-attention, \"{}\"", sample.text);
    let axes = ("ISO character written", "input piece");
    heatmaps(format, &Figure::weights(&title, 4, false, axes), &panels)
}

/// A line chart: the learning-rate schedule, losses per step, accuracy by length.
#[derive(Debug, Clone)]
pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// (label, points) per line.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Logarithmic y axis (for losses that fall by orders of magnitude).
    pub log_y: bool,
    /// Draw a dot on every point (for short series).
    pub dots: bool,
    /// A point to mark, with its label.
    pub mark: Option<(f64, f64, String)>,
}

pub fn line_chart(format: Format, chart: &LineChart) -> Result<Vec<u8>> {
    ensure!(
        chart.series.iter().any(|s| !s.1.is_empty()),
        "nothing to draw"
    );
    render!(format, (760, 420), draw_line_chart(chart))
}

fn draw_line_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &LineChart,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(de)?;
    let points = c.series.iter().flat_map(|s| s.1.iter().copied());
    let (x0, x1, y0, y1) = points.fold(
        (f64::MAX, f64::MIN, f64::MAX, f64::MIN),
        |(a, b, c, d), (x, y)| (a.min(x), b.max(x), c.min(y), d.max(y)),
    );
    let builder = |root| {
        let mut b = ChartBuilder::on(root);
        b.caption(c.title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(64);
        b
    };
    if c.log_y {
        let y0 = y0.max(1e-6);
        let mut chart = builder(root)
            .build_cartesian_2d(x0..x1, (y0 / 1.5..y1 * 1.5).log_scale())
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(c.x_desc)
            .y_desc(c.y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(de)?;
        draw_lines(&mut chart, c)
    } else {
        let pad = 0.05 * (y1 - y0).max(1e-12);
        let mut chart = builder(root)
            .build_cartesian_2d(x0..x1, y0 - pad..y1 + pad)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(c.x_desc)
            .y_desc(c.y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| {
                // Learning rates need exponents; accuracies do not.
                if y1 < 0.1 && *y != 0.0 {
                    format!("{y:.1e}")
                } else {
                    format!("{y:.2}")
                }
            })
            .draw()
            .map_err(de)?;
        draw_lines(&mut chart, c)
    }
}

fn draw_lines<'a, DB, Y>(
    chart: &mut ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    c: &LineChart,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64>,
{
    for (i, (label, pts)) in c.series.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        let line = LineSeries::new(pts.iter().copied(), colour.stroke_width(2));
        chart
            .draw_series(line)
            .map_err(de)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(
                    vec![(x, y), (x + 20, y)],
                    colour.stroke_width(3),
                )
            });
        if c.dots {
            let dots = pts.iter().map(|&p| Circle::new(p, 4, colour.filled()));
            chart.draw_series(dots).map_err(de)?;
        }
    }
    if let Some((x, y, label)) = &c.mark {
        let style = ("sans-serif", 14).into_font().color(&BLACK);
        chart
            .draw_series([Circle::new((*x, *y), 6, BLACK.stroke_width(2))])
            .map_err(de)?;
        chart
            .draw_series([Text::new(label.clone(), (*x, *y), style)])
            .map_err(de)?;
    }
    // Losses fall to the lower right; rates and accuracies rise or sit high.
    let corner = if c.log_y {
        SeriesLabelPosition::UpperRight
    } else {
        SeriesLabelPosition::LowerRight
    };
    chart
        .configure_series_labels()
        .position(corner)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(de)?;
    Ok(())
}

/// A measured rate with its 95 % interval and the count it rests on.
#[derive(Debug, Clone, Copy)]
pub struct RatePoint {
    pub x: f64,
    pub rate: f64,
    pub interval: (f64, f64),
    pub n: usize,
}

/// Rates with their intervals, one series per data set (chapter 10's exact
/// match by length).
#[derive(Debug, Clone)]
pub struct RateChart<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub series: Vec<(String, Vec<RatePoint>)>,
}

/// Dots with interval bars, and each point's n in a row along the bottom. The y
/// axis runs to 1 from a multiple of 0.05 below every interval, labelled every
/// 0.05 or 0.1: one miss moves a dot by its real size, and no two ticks read
/// the same.
pub fn rate_chart(format: Format, chart: &RateChart) -> Result<Vec<u8>> {
    ensure!(
        chart.series.iter().any(|s| !s.1.is_empty()),
        "nothing to draw"
    );
    render!(format, (860, 460), draw_rate_chart(chart))
}

fn draw_rate_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &RateChart,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(de)?;
    let points = || c.series.iter().flat_map(|s| s.1.iter());
    let lowest = points().map(|p| p.interval.0).fold(1.0, f64::min);
    // Room under the lowest bar for the rows of n.
    let y0 = ((lowest - 0.02) / 0.05).floor() * 0.05;
    let y0 = y0.clamp(0.0, 0.95);
    let (x0, x1) = points()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.x), b.max(p.x)));
    let step = if 1.0 - y0 > 0.3 { 0.1 } else { 0.05 };
    // A band above 1.0 for the legend: anywhere inside the data it would hide
    // the end of some interval (rates near 1 fill the top, long intervals the
    // middle, the rows of n the bottom).
    let top = 1.0 + 0.25 * (1.0 - y0);
    let mut chart = ChartBuilder::on(root)
        .caption(c.title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x0 - 0.6..x1 + 0.6, y0..top)
        .map_err(de)?;
    let ticks = ((1.0 - y0) / step).round() as usize + 1;
    chart
        .configure_mesh()
        .x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .x_labels((x1 - x0) as usize + 1)
        .x_label_formatter(&|x| {
            // Integer positions only: the series sit either side of them.
            if (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .y_labels(ticks)
        // No rate above 1: the band there is the legend's.
        .y_label_formatter(&|y| {
            if *y <= 1.0 + 1e-9 {
                format!("{y:.2}")
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(de)?;
    let k = c.series.len() as f64;
    for (i, (label, pts)) in c.series.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        let dx = (i as f64 - (k - 1.0) / 2.0) * 0.22; // side by side
        let bars = pts.iter().map(|p| {
            PathElement::new(
                vec![(p.x + dx, p.interval.0), (p.x + dx, p.interval.1)],
                colour.stroke_width(2),
            )
        });
        chart.draw_series(bars).map_err(de)?;
        let dots = pts
            .iter()
            .map(|p| Circle::new((p.x + dx, p.rate), 4, colour.filled()));
        chart
            .draw_series(dots)
            .map_err(de)?
            .label(label.as_str())
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
        // Each series' counts in a row of its own along the bottom.
        let style = ("sans-serif", 11)
            .into_font()
            .color(&colour)
            .pos(Pos::new(HPos::Center, VPos::Center));
        let y = y0 + (0.04 + 0.045 * i as f64) * (top - y0);
        let counts = pts.iter().map(|p| {
            Text::new(format!("{}", p.n), (p.x + dx, y), style.clone())
        });
        chart.draw_series(counts).map_err(de)?;
        let label = Text::new("n", (x0 - 0.45, y), style.clone());
        chart.draw_series([label]).map_err(de)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperMiddle)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(de)?;
    Ok(())
}
