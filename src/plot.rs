//! Drawing with plotters: the training curves (chapter 09); chapters 11 and 12 add theirs.
//!
//! Text is rendered with the DejaVu Sans font bundled in `src/assets`, so plots look the
//! same on every machine and need no system fonts.
use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;

use crate::train::EpochReport;

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

/// Writes a run's epoch table as tab-separated values (header line first).
pub fn write_history(path: &Path, label: &str, history: &[EpochReport]) -> Result<()> {
    let mut s = format!("# {label}\nepoch\tloss\ttoken_acc\tval_exact_match\tlr\tseconds\n");
    for r in history {
        s += &format!("{}\t{:.6}\t{:.6}\t{:.6}\t{:.6e}\t{:.1}\n", r.epoch, r.loss, r.token_acc, r.val_exact_match, r.lr, r.seconds);
    }
    std::fs::write(path, s).with_context(|| format!("cannot write {}", path.display()))
}

/// Reads back (label, validation exact match per epoch) from `write_history`'s file.
pub fn read_history(path: &Path) -> Result<(String, Vec<f64>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}: train that run first", path.display()))?;
    let mut lines = text.lines();
    let label = lines.next().and_then(|l| l.strip_prefix("# ")).ok_or_else(|| anyhow!("{}: no '# label' first line", path.display()))?;
    let values = lines
        .skip(1)
        .map(|l| l.split('\t').nth(3).and_then(|v| v.parse().ok()).ok_or_else(|| anyhow!("{}: bad line '{l}'", path.display())))
        .collect::<Result<Vec<f64>>>()?;
    Ok((label.to_string(), values))
}

/// Validation exact match per epoch, one line per run.
pub fn exact_match_plot(path: &Path, runs: &[(String, Vec<f64>)]) -> Result<()> {
    register_fonts();
    let epochs = runs.iter().map(|r| r.1.len()).max().unwrap_or(1).max(1);
    crate::train::create_parent_dir(path)?;
    let root = SVGBackend::new(path, (720, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Validation exact match per epoch", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0.5f64..epochs as f64 + 0.5, 0f64..1.02)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("exact match (greedy, 500 samples)")
        .x_labels(epochs)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .disable_x_mesh()
        .draw()?;
    for (i, (label, values)) in runs.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64)> = values.iter().enumerate().map(|(e, v)| (e as f64 + 1.0, *v)).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(3)))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).border_style(BLACK).background_style(WHITE.mix(0.9)).draw()?;
    root.present().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Chapter 12's sweep on log-log axes: time per call (left) and peak memory (right)
/// against sequence length, for both attention paths.
pub fn sweep_plot(path: &Path, rows: &[crate::sdpa::SweepRow], subtitle: &str) -> Result<()> {
    register_fonts();
    crate::train::create_parent_dir(path)?;
    let root = SVGBackend::new(path, (960, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&format!("Hand-written attention vs SDPA ({subtitle})"), ("sans-serif", 18))?;
    let (left, right) = root.split_horizontally(480);
    type Pick = fn(&crate::sdpa::SweepRow) -> Option<crate::sdpa::Measurement>;
    let paths: [(&str, Pick, usize); 2] = [("hand-written", |r| r.manual, 1), ("SDPA (fused)", |r| r.sdpa, 3)];
    let panels: [(&DrawingArea<SVGBackend, plotters::coord::Shift>, &str, fn(crate::sdpa::Measurement) -> Option<f64>); 2] = [
        (&left, "ms per call", |m| Some(m.ms)),
        // Readings under 1 MiB are below what the measurement resolves; leave them out.
        (&right, "peak memory (MiB)", |m| m.peak_bytes.map(|b| b as f64 / (1u64 << 20) as f64).filter(|&mib| mib >= 1.0)),
    ];
    let lens: Vec<f64> = rows.iter().map(|r| r.len as f64).collect();
    let (x0, x1) = (lens.first().copied().unwrap_or(128.0) / 1.3, lens.last().copied().unwrap_or(2048.0) * 1.3);
    for (area, y_desc, value) in panels {
        let ys: Vec<f64> = rows.iter().flat_map(|r| paths.iter().filter_map(move |p| p.1(r).and_then(value))).collect();
        let (y0, y1) = ys.iter().fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
        let (y0, y1) = if ys.is_empty() { (0.1, 10.0) } else { (y0 / 2.0, y1 * 2.0) };
        let mut chart = ChartBuilder::on(area)
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
        // Label only 1-2-5 steps (100, 200, 500, 1000, …), or the log axis crowds its labels.
        let one_two_five = |x: &f64| {
            let lead = x / 10f64.powf(x.log10().floor());
            if [1.0, 2.0, 5.0].iter().any(|d| (lead - d).abs() < 1e-6) { format!("{x:.0}") } else { String::new() }
        };
        chart
            .configure_mesh()
            .x_desc("sequence length L")
            .y_desc(y_desc)
            .x_label_formatter(&one_two_five)
            .y_label_formatter(&|y| format!("{y}"))
            .draw()?;
        for (label, pick, color) in paths {
            let color = Palette99::pick(color).to_rgba();
            let pts: Vec<(f64, f64)> = rows.iter().filter_map(|r| Some((r.len as f64, value(pick(r)?)?))).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(3)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart.configure_series_labels().position(SeriesLabelPosition::UpperLeft).border_style(BLACK).background_style(WHITE.mix(0.9)).draw()?;
    }
    root.present().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
