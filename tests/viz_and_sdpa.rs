//! Chapters 10 to 12: chapter 10's rate chart, the attention-map extraction, the
//! heatmap writer, and the two attention paths agreeing.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::config::TransformerConfig;
use transformer_course::sdpa::{
    log_log_slope, manual_causal_forward, score_matrix_bytes, sdpa_forward,
    to_sdpa_mask, Measurement, SweepRow,
};
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, Transformer,
};
use transformer_course::viz::{
    attention_maps, expected_column, mean_over_heads, row_maxima,
};
use workbench::plot::{
    heatmaps, rate_chart, save, Figure, Format, Panel, RateChart, RatePoint,
};

mod common;
use common::global_rng;

fn small_model(seed: i64) -> (nn::VarStore, Transformer) {
    common::tiny_model(seed)
}

/// Multi-head attention of width `d` with `h` heads, its weights drawn from `seed`.
fn mha(d: i64, h: i64, seed: i64) -> (nn::VarStore, MultiHeadAttention) {
    let _rng = global_rng();
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig {
        d_model: d,
        num_heads: h,
        ..common::tiny_config()
    };
    let m = MultiHeadAttention::new(vs.root(), &cfg).unwrap();
    (vs, m)
}

fn randn(shape: &[i64], seed: i64) -> Tensor {
    let _rng = global_rng();
    tch::manual_seed(seed);
    Tensor::randn(shape, (Kind::Float, Device::Cpu))
}

fn figure(title: &str, columns: usize, values: bool) -> Figure<'_> {
    Figure::weights(title, columns, values, ("x", "y"))
}

#[rstest]
#[case(&[7, 3, 0, 9, 5, 1, 8])]
#[case(&[4])]
#[case(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2])]
fn attention_maps_are_cut_to_the_real_tokens(#[case] digits: &[i64]) {
    let (_vs, m) = small_model(0);
    let maps = attention_maps(&m, digits).unwrap();
    let n_src = digits.len() + 1;
    assert_eq!(maps.source_labels.len(), n_src);
    assert_eq!(maps.source_labels.last().unwrap(), "<eos>");
    assert_eq!(maps.target_labels[0], "<bos>");
    let rows = maps.target_labels.len();
    assert!(
        rows >= 1 && rows <= n_src,
        "at most BOS + one row per digit, got {rows}"
    );
    assert_eq!(maps.cross.len(), 2, "one map per layer");
    assert_eq!(maps.cross[1].len(), 4, "one map per head");
    assert_eq!(
        (maps.cross[1][0].len(), maps.cross[1][0][0].len()),
        (rows, n_src)
    );
    assert_eq!(
        (
            maps.encoder_self[0][0].len(),
            maps.encoder_self[0][0][0].len()
        ),
        (n_src, n_src)
    );
    assert_eq!(
        (
            maps.decoder_self[0][0].len(),
            maps.decoder_self[0][0][0].len()
        ),
        (rows, rows)
    );
    // Cutting drops only PAD columns, which get no weight, so each row still sums to 1.
    let mean = mean_over_heads(&maps.cross[1]);
    for r in &mean {
        assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-5, "{r:?}");
    }
    for r in &maps.decoder_self[0][2] {
        assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-5);
    }
}

#[test]
fn attention_maps_reject_overlong_input() {
    let (_vs, m) = small_model(0);
    let err = attention_maps(&m, &[1; 13]).unwrap_err().to_string();
    assert!(err.contains("1 to 12 digits"), "{err}");
}

#[test]
fn anti_diagonal_bookkeeping() {
    // 3 digits: rows <bos>, d3, d2, d1 look at columns 2, 1, 0 and then EOS (3).
    assert_eq!(
        (0..4).map(|i| expected_column(i, 3)).collect::<Vec<_>>(),
        vec![2, 1, 0, 3]
    );
    let perfect = vec![
        vec![0.0, 0.1, 0.9, 0.0],
        vec![0.0, 0.8, 0.2, 0.0],
        vec![0.7, 0.3, 0.0, 0.0],
        vec![0.0, 0.0, 0.1, 0.9],
    ];
    assert!(row_maxima(&perfect, 3).iter().all(|r| r.2));
    let mut blurred = perfect.clone();
    blurred[1] = vec![0.0, 0.2, 0.8, 0.0];
    let m = row_maxima(&blurred, 3);
    assert_eq!((m[1].0, m[1].2), (2, false));
}

fn panel(n: usize) -> Panel {
    Panel {
        title: "t".into(),
        matrix: (0..n)
            .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect(),
        row_labels: (0..n).map(|i| format!("r{i}")).collect(),
        col_labels: (0..n).map(|i| format!("c{i}")).collect(),
    }
}

#[test]
fn heatmap_writer_makes_valid_svg_and_png() {
    let svg = heatmaps(Format::Svg, &figure("A title", 1, true), &[panel(4)])
        .unwrap();
    let text = String::from_utf8(svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    for label in ["A title", "r3", "c0", "1.00", "0.00"] {
        assert!(text.contains(label), "the SVG lacks '{label}'");
    }
    let bytes = heatmaps(Format::Png, &figure("A title", 1, true), &[panel(4)])
        .unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    // Width and height sit big-endian at bytes 16..24 of the IHDR chunk; they follow
    // the layout (cells of 52 px plus margins).
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), (90 + 4 * 52 + 110, 70 + 4 * 52 + 40 + 60));
    // A grid of 2×3 panels is three panels wide and two high.
    let g =
        heatmaps(Format::Png, &figure("grid", 3, false), &vec![panel(3); 6])
            .unwrap();
    assert_eq!(
        u32::from_be_bytes(g[16..20].try_into().unwrap()),
        3 * (90 + 3 * 22) + 110
    );
    assert_eq!(
        u32::from_be_bytes(g[20..24].try_into().unwrap()),
        2 * (70 + 3 * 22 + 40) + 60
    );
}

/// The head-ablation figure of chapter 11: whole, signed changes on a scale
/// centred on 0, in a figure too short for the colour bar on its own.
#[test]
fn a_diverging_heatmap_labels_its_cells_with_signs_and_fits_its_colour_bar() {
    let changes = Panel {
        title: "t".into(),
        matrix: vec![vec![-3.0, 0.0, 2.0, -0.2]],
        row_labels: vec!["0".into()],
        col_labels: (0..4).map(|h| h.to_string()).collect(),
    };
    let fig = Figure {
        range: (-4.0, 4.0),
        decimals: 0,
        ..figure("changes", 1, true)
    };
    let text =
        String::from_utf8(heatmaps(Format::Svg, &fig, &[changes]).unwrap())
            .unwrap();
    // plotters writes each text on a line of its own.
    let cell = |s: &str| text.contains(&format!(">\n{s}\n</text>"));
    for label in ["-3", "+2", "0", "-4", "+4"] {
        assert!(cell(label), "no cell or tick labelled '{label}'");
    }
    // -0.2 rounds to 0 and is labelled "0", never "-0"; nothing is "+0".
    assert!(!cell("-0") && !cell("+0"));
    // One row of cells is shorter than the colour bar (80 to 280 px) and its
    // lowest label: the figure grows to hold them.
    let png = heatmaps(Format::Png, &fig, &[panel(1)]).unwrap();
    assert!(u32::from_be_bytes(png[20..24].try_into().unwrap()) >= 300);
}

#[test]
fn figures_are_written_in_the_format_their_name_says() {
    let dir = std::env::temp_dir()
        .join(format!("course-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["h.svg", "h.png"] {
        let path = dir.join(name);
        save(&path, |f| heatmaps(f, &figure("t", 1, true), &[panel(2)]))
            .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let is_png = &bytes[1..4] == b"PNG";
        assert_eq!(
            is_png,
            name.ends_with(".png"),
            "{name} holds the wrong format"
        );
    }
    let err = save(&dir.join("h.jpg"), |f| {
        heatmaps(f, &figure("t", 1, true), &[panel(2)])
    })
    .unwrap_err();
    assert!(err.to_string().contains(".svg or .png"), "{err}");
    assert!(!dir.join("h.jpg").exists());
}

#[rstest]
#[case(2, 16, 32, 4)]
#[case(1, 33, 64, 8)]
fn sdpa_agrees_with_the_hand_written_path_on_a_causal_mask(
    #[case] b: i64,
    #[case] l: i64,
    #[case] d: i64,
    #[case] h: i64,
) {
    let (_vs, mha) = mha(d, h, 0);
    let x = randn(&[b, l, d], 1);
    let diff = (manual_causal_forward(&mha, &x)
        - sdpa_forward(&mha, &x, true, None))
    .abs()
    .max()
    .double_value(&[]);
    assert!(diff < 1e-4, "{diff}");
    // Passing our causal mask through the converter must give the same as is_causal.
    let via_mask =
        sdpa_forward(&mha, &x, false, Some(&make_causal_mask(l, Device::Cpu)));
    assert!(
        (via_mask - sdpa_forward(&mha, &x, true, None))
            .abs()
            .max()
            .double_value(&[])
            < 1e-5
    );
}

#[test]
fn sdpa_agrees_with_the_hand_written_path_on_a_padding_mask() {
    let (_vs, mha) = mha(32, 4, 1);
    let x = randn(&[3, 10, 32], 2);
    let ids = Tensor::from_slice(&[
        1i64, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1,
        0, 0, 0, 0, 0, 0, 0,
    ])
    .view([3, 10]);
    let pad = make_padding_mask(&ids);
    let manual = mha.forward(&x, &x, &x, Some(&pad), false).0;
    let diff = (manual - sdpa_forward(&mha, &x, false, Some(&pad)))
        .abs()
        .max()
        .double_value(&[]);
    assert!(diff < 1e-4, "{diff}");
}

#[test]
fn mask_conversion_flips_every_entry() {
    let ours = make_causal_mask(5, Device::Cpu);
    let theirs = to_sdpa_mask(&ours);
    assert!(theirs.logical_xor(&ours).all().int64_value(&[]) == 1);
    assert_eq!(theirs.kind(), Kind::Bool);
}

#[test]
fn sweep_bookkeeping() {
    let m = |ms, mib: u64| {
        Some(Measurement {
            ms,
            peak_bytes: Some(mib << 20),
        })
    };
    let r = SweepRow {
        len: 256,
        manual: m(8.0, 64),
        sdpa: m(2.0, 4),
    };
    assert_eq!(r.speedup(), Some(4.0));
    assert_eq!(r.memory_ratio(), Some(16.0));
    let oom = SweepRow {
        len: 8192,
        manual: None,
        sdpa: m(1.0, 4),
    };
    assert_eq!((oom.speedup(), oom.memory_ratio()), (None, None));
    let tiny = SweepRow {
        len: 128,
        manual: Some(Measurement {
            ms: 1.0,
            peak_bytes: Some(10),
        }),
        sdpa: Some(Measurement {
            ms: 1.0,
            peak_bytes: Some(0),
        }),
    };
    assert_eq!(tiny.memory_ratio(), None, "no ratio of sub-MiB readings");
    assert_eq!(score_matrix_bytes(8, 8, 1024, Kind::BFloat16), 128 << 20);
    assert!((log_log_slope((128.0, 1.0), (256.0, 4.0)) - 2.0).abs() < 1e-12);
    assert!((log_log_slope((128.0, 3.0), (1024.0, 24.0)) - 1.0).abs() < 1e-12);
}

/// The numbers of `name="value"` attributes in an SVG element.
fn svg_attr(element: &str, name: &str) -> Option<f64> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = start + element[start..].find('"')?;
    element[start..end].parse().ok()
}

/// Chapter 10's figure, with the rates of the book's run: the legend must not
/// cover any interval bar (it once hid the lower end of the three-digit one).
#[test]
fn the_rate_charts_legend_covers_no_interval() {
    use transformer_course::generate::wilson_interval;
    let series = |counts: &[(usize, usize)]| -> Vec<RatePoint> {
        counts
            .iter()
            .enumerate()
            .map(|(i, &(k, n))| RatePoint {
                x: (i + 3) as f64,
                rate: k as f64 / n as f64,
                interval: wilson_interval(k, n),
                n,
            })
            .collect()
    };
    // Right answers and samples for 3 to 12 digits: the Intel model of an earlier
    // version of chapter 10 (its output is in the git history as
    // book/src/outputs/10_greedy_decode.txt).
    let test = [
        (78, 78),
        (476, 476),
        (533, 533),
        (542, 542),
        (541, 541),
        (550, 554),
        (563, 568),
        (606, 606),
        (548, 548),
        (553, 554),
    ];
    let val = [
        (134, 134),
        (101, 101),
        (96, 96),
        (100, 100),
        (91, 91),
        (103, 104),
        (98, 99),
        (100, 100),
        (90, 90),
        (85, 85),
    ];
    let chart = RateChart {
        title: "t",
        x_desc: "x",
        y_desc: "y",
        series: vec![
            ("test".into(), series(&test)),
            ("val".into(), series(&val)),
        ],
    };
    let svg =
        String::from_utf8(rate_chart(Format::Svg, &chart).unwrap()).unwrap();
    let elements: Vec<&str> = svg.split('<').collect();
    // The legend's box: the one translucent white rectangle.
    let boxes: Vec<(f64, f64, f64, f64)> = elements
        .iter()
        .filter(|e| e.starts_with("rect") && e.contains("opacity=\"0.9\""))
        .map(|e| {
            let at = |n| svg_attr(e, n).expect("a rect's geometry");
            (
                at("x"),
                at("y"),
                at("x") + at("width"),
                at("y") + at("height"),
            )
        })
        .collect();
    assert_eq!(boxes.len(), 1, "one legend box expected in:\n{svg}");
    let (x0, y0, x1, y1) = boxes[0];
    // The interval bars: the polylines drawn two pixels wide.
    let bars: Vec<&str> = elements
        .iter()
        .copied()
        .filter(|e| {
            e.starts_with("polyline") && e.contains("stroke-width=\"2\"")
        })
        .collect();
    assert_eq!(bars.len(), 20, "one bar per length and set");
    for bar in bars {
        let points = bar.split("points=\"").nth(1).unwrap().split('"').next();
        let xy: Vec<(f64, f64)> = points
            .unwrap()
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let (x, top, bottom) =
            (xy[0].0, xy[0].1.min(xy[1].1), xy[0].1.max(xy[1].1));
        let hidden = x >= x0 && x <= x1 && bottom >= y0 && top <= y1;
        assert!(!hidden, "the legend {:?} covers the bar {xy:?}", boxes[0]);
    }
    // Nor any dot (a circle of radius 4; the legend's own are inside its box).
    let dots = elements.iter().filter(|e| e.starts_with("circle"));
    let mut seen = 0;
    for dot in dots {
        let (cx, cy) =
            (svg_attr(dot, "cx").unwrap(), svg_attr(dot, "cy").unwrap());
        if cx >= x0 && cx <= x1 && cy >= y0 && cy <= y1 {
            continue; // the legend's sample dot
        }
        seen += 1;
        let near = cx + 4.0 >= x0
            && cx - 4.0 <= x1
            && cy + 4.0 >= y0
            && cy - 4.0 <= y1;
        assert!(
            !near,
            "the legend {:?} touches the dot at {cx}, {cy}",
            boxes[0]
        );
    }
    assert_eq!(seen, 20, "one dot per length and set");
}
