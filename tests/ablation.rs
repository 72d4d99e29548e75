//! The ablation study's seam (workbench/src/ablation.rs): with every switch at
//! its default it is the lesson, bit for bit; each variant changes what it says
//! it changes, shown by a behaviour only that change can cause.
mod common;

use common::global_rng;
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::data::make_dataset;
use transformer_course::generate::greedy_decode;
use transformer_course::train::{Learner, TrainOptions, Trainer};
use transformer_course::vocab::SEQ_LEN;
use workbench::ablation::{
    variant_named, Ablated, AblatedTrainer, Norm, Position, Switches, Variant,
    VARIANTS,
};
use workbench::optim::AdamKind;

/// The course's shape, shrunk: d_model 32, 4 heads of 8, with dropout.
fn small() -> TransformerConfig {
    TransformerConfig {
        d_model: 32,
        num_heads: 4,
        d_ff: 64,
        ..TransformerConfig::reverse_task()
    }
}

fn named(name: &str) -> &'static Variant {
    variant_named(name).expect("a variant of the study")
}

/// Builds `name`'s model on a fresh VarStore from `seed`.
fn build(name: &str, seed: i64) -> (nn::VarStore, Ablated) {
    let v = named(name);
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = Ablated::new(&vs, v.on(small()), v.switches).unwrap();
    (vs, model)
}

fn batch(n: usize, seed: u64) -> (Tensor, Tensor) {
    let data = make_dataset(n, seed);
    (data.src, data.tgt)
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[test]
fn the_course_variant_is_the_lesson_bit_for_bit() {
    let _g = global_rng();
    let (_vs, ablated) = build("course", 7);
    let lesson = &ablated.model;
    let (src, tgt) = batch(16, 3);
    let tgt_in = tgt.narrow(1, 0, SEQ_LEN as i64 - 1);
    let ours = ablated.forward(&src, &tgt_in, false);
    let theirs = lesson.forward(&src, &tgt_in, false);
    assert!(
        ours.equal(&theirs),
        "inference logits differ from the lesson's"
    );
    // Training mode: dropout draws the same masks in the same order.
    tch::manual_seed(11);
    let ours = ablated.forward(&src, &tgt_in, true);
    tch::manual_seed(11);
    let theirs = lesson.forward(&src, &tgt_in, true);
    assert!(
        ours.equal(&theirs),
        "training logits differ from the lesson's"
    );
    let ours = ablated.greedy(&src);
    let theirs = greedy_decode(lesson, &src, SEQ_LEN);
    assert!(
        ours.equal(&theirs),
        "greedy decoding differs from chapter 10's"
    );
}

#[test]
fn the_course_variant_trains_as_chapter_09_does() {
    let _g = global_rng();
    let opts = TrainOptions {
        seed: 5,
        ..TrainOptions::default()
    };
    let (src, tgt) = batch(32, 1);
    // One after the other: each trainer seeds the global generator when it is
    // built, and its dropout masks come from it.
    let mut lesson = Trainer::new(small(), Device::Cpu, &opts).unwrap();
    let losses: Vec<f64> = (0..3)
        .map(|_| lesson.learn(&src, &tgt).unwrap().0)
        .collect();
    let course = named("course");
    let mut ours =
        AblatedTrainer::new(course, small(), Device::Cpu, &opts, AdamKind::Tch)
            .unwrap();
    for (step, loss) in (1..=3).zip(losses) {
        assert_eq!(
            ours.learn(&src, &tgt),
            loss,
            "step {step}: the losses differ"
        );
        assert_eq!(lesson.lr_at(step), ours.lr_at(step));
    }
    let theirs = lesson.vs.variables();
    for (name, w) in ours.trainer.vs.variables() {
        assert!(w.equal(&theirs[&name]), "{name} differs after 3 steps");
    }
}

#[test]
fn without_positions_the_encoder_cannot_tell_order() {
    let _g = global_rng();
    // Five digits and EOS, then PAD; the permutation swaps two digits.
    let src = Tensor::from_slice(&[10i64, 6, 3, 12, 8, 2, 0, 0]).view([1, 8]);
    let order = Tensor::from_slice(&[3i64, 1, 2, 0, 4, 5, 6, 7]);
    let swapped = src.index_select(1, &order);
    for (name, blind) in [("course", false), ("no-position", true)] {
        let (_vs, m) = build(name, 3);
        let (memory, _) = m.encode(&src, false);
        let (memory2, _) = m.encode(&swapped, false);
        // Row i of the swapped input's memory is row order[i] of the original.
        let permuted = memory.index_select(1, &order);
        let same = max_diff(&permuted, &memory2) < 1e-5;
        assert_eq!(
            same,
            blind,
            "{name}: swapping two source tokens should {}move their memory \
             rows with them and change nothing else",
            if blind { "" } else { "not only " }
        );
    }
}

#[test]
fn a_learned_table_is_trained_and_used() {
    let _g = global_rng();
    let (vs, m) = build("learned-position", 3);
    let names: Vec<String> = vs.variables().into_keys().collect();
    for stack in ["encoder", "decoder"] {
        let name = format!("{stack}.embed.learned_pe");
        assert!(names.contains(&name), "no trainable {name} in {names:?}");
    }
    let (src, _) = batch(4, 2);
    let before = m.encode(&src, false).0;
    tch::no_grad(|| {
        let mut t = vs.variables()["encoder.embed.learned_pe"].shallow_clone();
        // Not a constant: LayerNorm removes a shift of every feature alike.
        let _ = t.g_add_(&t.randn_like());
    });
    let after = m.encode(&src, false).0;
    assert!(
        max_diff(&before, &after) > 1e-3,
        "the learned table is unused"
    );
}

#[test]
fn without_the_scale_attention_is_the_course_with_q_times_sqrt_dk() {
    let _g = global_rng();
    let (src, tgt) = batch(8, 4);
    let tgt_in = tgt.narrow(1, 0, 6);
    let (_a, course) = build("course", 9);
    let (_b, unscaled) = build("no-scale", 9);
    let before = course.forward(&src, &tgt_in, false);
    let raw = unscaled.forward(&src, &tgt_in, false);
    assert!(max_diff(&before, &raw) > 1e-3, "no-scale changed nothing");
    // Same weights; scaling every W_q by √d_k in the course's model must give
    // the unscaled model's logits.
    let d_k = (small().d_model / small().num_heads) as f64;
    tch::no_grad(|| {
        let m = &course.model;
        let enc = m.encoder.layers.iter().map(|l| &l.mha);
        let dec = m
            .decoder
            .layers
            .iter()
            .flat_map(|l| [&l.self_mha, &l.cross_mha]);
        for mha in enc.chain(dec) {
            let _ = mha.W_q.ws.shallow_clone().g_mul_scalar_(d_k.sqrt());
            if let Some(b) = &mha.W_q.bs {
                let _ = b.shallow_clone().g_mul_scalar_(d_k.sqrt());
            }
        }
    });
    let scaled = course.forward(&src, &tgt_in, false);
    assert!(
        max_diff(&scaled, &raw) < 1e-4,
        "no-scale is not softmax(QKᵀ)V: {}",
        max_diff(&scaled, &raw)
    );
}

/// Zeroes every sublayer's output (W_o and the FFN's second Linear), so that
/// only the residual path carries anything.
fn silence_sublayers(m: &Ablated) {
    tch::no_grad(|| {
        let e = m.model.encoder.layers.iter();
        for l in e {
            for lin in [&l.mha.W_o, &l.ffn.lin2] {
                let _ = lin.ws.shallow_clone().zero_();
                let _ = lin.bs.as_ref().unwrap().shallow_clone().zero_();
            }
        }
    });
}

#[rstest]
#[case::course("course", true)]
#[case::no_residual("no-residual", false)]
fn with_silent_sublayers_only_a_residual_carries_the_input(
    #[case] name: &str,
    #[case] carried: bool,
) {
    let _g = global_rng();
    let (_vs, m) = build(name, 4);
    silence_sublayers(&m);
    let (src, _) = batch(4, 6);
    let (memory, _) = m.encode(&src, false);
    let spread = memory.std(false).double_value(&[]);
    assert_eq!(
        spread > 0.5,
        carried,
        "{name}: memory spread {spread} with silent sublayers"
    );
}

/// Sets the gain γ of every LayerNorm, the final ones too.
fn set_gains(m: &Ablated, gain: f64) {
    let enc = &m.model.encoder;
    let mut norms: Vec<&nn::LayerNorm> = vec![&enc.ln_final];
    for l in &enc.layers {
        norms.extend([&l.ln1, &l.ln2]);
    }
    tch::no_grad(|| {
        for ln in norms {
            let _ = ln.ws.as_ref().unwrap().shallow_clone().fill_(gain);
        }
    });
}

#[rstest]
#[case::pre("course", Norm::Pre)]
#[case::post("post-norm", Norm::Post)]
#[case::none("no-layernorm", Norm::None)]
fn each_norm_placement_reads_its_layernorms(
    #[case] name: &str,
    #[case] norm: Norm,
) {
    let _g = global_rng();
    let (_vs, m) = build(name, 8);
    assert_eq!(m.switches.norm, norm);
    let (src, _) = batch(4, 7);
    let before = m.encode(&src, false).0;
    set_gains(&m, 3.0);
    let after = m.encode(&src, false).0;
    let changed = max_diff(&before, &after) > 1e-3;
    assert_eq!(changed, norm != Norm::None, "{name}: LayerNorm gains");
    // The stack's last operation is a LayerNorm in Pre (ln_final) and in Post
    // (the last layer's ln2): rows of the memory have spread γ = 3 then.
    let row_std = after.std_dim(-1, false, false).mean(Kind::Float);
    let row_std = row_std.double_value(&[]);
    let normalised = (row_std - 3.0).abs() < 0.05;
    assert_eq!(normalised, norm != Norm::None, "{name}: row std {row_std}");
}

#[test]
fn post_norm_has_no_final_layernorm() {
    let _g = global_rng();
    let (_vs, m) = build("post-norm", 8);
    let (src, _) = batch(4, 7);
    let before = m.encode(&src, false).0;
    let ln = &m.model.encoder.ln_final;
    tch::no_grad(|| {
        let _ = ln.ws.as_ref().unwrap().shallow_clone().fill_(5.0);
    });
    assert!(before.equal(&m.encode(&src, false).0));
}

#[rstest]
#[case::course("course", false)]
#[case::no_causal_mask("no-causal-mask", true)]
fn only_without_the_causal_mask_can_a_position_see_later_tokens(
    #[case] name: &str,
    #[case] peeks: bool,
) {
    let _g = global_rng();
    let (_vs, m) = build(name, 2);
    // Source 7 6 5 4 3 2 1, EOS; the decoder has read BOS 1 2 3 4 5 6 7.
    let src = Tensor::from_slice(&[10i64, 9, 8, 7, 6, 5, 4, 2]).view([1, 8]);
    let tgt_in = Tensor::from_slice(&[1i64, 4, 5, 6, 7, 8, 9, 10]).view([1, 8]);
    let changed = tgt_in.copy();
    let _ = changed.narrow(1, 7, 1).fill_(11); // the last input token
    let (memory, mask) = m.encode(&src, false);
    let a = m.decode(&tgt_in, &memory, mask.as_ref(), false);
    let b = m.decode(&changed, &memory, mask.as_ref(), false);
    let earlier = max_diff(&a.narrow(1, 0, 7), &b.narrow(1, 0, 7));
    assert_eq!(
        earlier > 1e-5,
        peeks,
        "{name}: earlier logits moved {earlier}"
    );
}

#[rstest]
#[case::course("course", false)]
#[case::no_padding_mask("no-padding-mask", true)]
fn only_without_the_padding_mask_does_padding_change_the_answer(
    #[case] name: &str,
    #[case] reads_pad: bool,
) {
    let _g = global_rng();
    let (_vs, m) = build(name, 2);
    // Digits 7 3 0, EOS: padded to 6 and to 14.
    let short = Tensor::from_slice(&[10i64, 6, 3, 2, 0, 0]).view([1, 6]);
    let pad = Tensor::zeros([1, 8], (Kind::Int64, Device::Cpu));
    let long = Tensor::cat(&[short.shallow_clone(), pad], 1);
    let a = m.encode(&short, false).0.narrow(1, 0, 4);
    let b = m.encode(&long, false).0.narrow(1, 0, 4);
    assert_eq!(max_diff(&a, &b) > 1e-5, reads_pad, "{name}");
}

#[test]
fn without_warmup_the_rate_starts_at_the_peak_and_decays_as_before() {
    let _g = global_rng();
    let opts = TrainOptions::default();
    let make = |name| {
        AblatedTrainer::new(
            named(name),
            small(),
            Device::Cpu,
            &opts,
            AdamKind::Tch,
        )
        .unwrap()
    };
    let (course, flat) = (make("course"), make("no-warmup"));
    let peak = course.lr_at(opts.warmup);
    assert_eq!(flat.lr_at(1), peak);
    assert_eq!(flat.lr_at(opts.warmup / 2), peak);
    assert!(course.lr_at(1) < peak / 100.0);
    for step in [opts.warmup, 2 * opts.warmup, 5000] {
        assert_eq!(flat.lr_at(step), course.lr_at(step), "step {step}");
    }
}

#[rstest]
#[case::one_head("one-head", 1, 0.1)]
#[case::no_dropout("no-dropout", 4, 0.0)]
fn config_variants_change_only_their_field(
    #[case] name: &str,
    #[case] heads: i64,
    #[case] dropout: f64,
) {
    let c = named(name).on(small());
    assert_eq!((c.num_heads, c.dropout), (heads, dropout));
    let rest = TransformerConfig {
        num_heads: 4,
        dropout: 0.1,
        ..c
    };
    assert_eq!(rest, small());
}

/// (std of the embedding's non-PAD rows, largest |w| of one W_q) of a model.
fn init_stats(name: &str) -> (f64, f64) {
    let v = named(name);
    tch::manual_seed(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = Ablated::new(&vs, v.config(), v.switches).unwrap();
    let emb = &m.model.encoder.embed.emb.ws;
    assert_eq!(emb.get(0).abs().sum(Kind::Float).double_value(&[]), 0.0);
    let rows = emb.narrow(0, 1, emb.size()[0] - 1);
    let w = &m.model.encoder.layers[0].mha.W_q.ws;
    (
        rows.std(true).double_value(&[]),
        w.abs().max().double_value(&[]),
    )
}

#[rstest]
#[case::paper_paper("course", Init::Paper, Init::Paper)]
#[case::default_xavier("init-emb-default", Init::FrameworkDefault, Init::Paper)]
#[case::paper_default(
    "init-linear-default",
    Init::Paper,
    Init::FrameworkDefault
)]
#[case::both(
    "init-both-default",
    Init::FrameworkDefault,
    Init::FrameworkDefault
)]
fn the_init_grid_sets_embedding_and_linear_apart(
    #[case] name: &str,
    #[case] embedding: Init,
    #[case] linear: Init,
) {
    let _g = global_rng();
    let s: Switches = named(name).switches;
    assert_eq!((s.embedding_init, s.linear_init), (embedding, linear));
    let (emb_std, w_max) = init_stats(name);
    let d = 128.0f64;
    let want_std = if embedding == Init::Paper {
        d.powf(-0.5)
    } else {
        1.0
    };
    assert!(
        (emb_std / want_std - 1.0).abs() < 0.05,
        "{name}: embedding std {emb_std}, want {want_std}"
    );
    let bound = if linear == Init::Paper {
        (6.0 / (2.0 * d)).sqrt() // Xavier for 128 → 128
    } else {
        1.0 / d.sqrt() // PyTorch's U(±1/√fan_in)
    };
    assert!(
        w_max <= bound && w_max > 0.95 * bound,
        "{name}: W_q's largest weight {w_max}, bound {bound}"
    );
}

#[test]
fn every_variant_differs_from_its_reference_in_exactly_what_it_names() {
    let course = VARIANTS[0];
    assert_eq!(course.name, "course");
    assert_eq!(course.switches, Switches::COURSE);
    for v in &VARIANTS[1..] {
        let reference =
            variant_named(v.reference()).expect("a known reference");
        assert_eq!(
            reference.reference(),
            "course",
            "{}: one level deep",
            v.name
        );
        let s = v.switches;
        let c = reference.switches;
        let changed = [
            s.position != c.position,
            s.scale != c.scale,
            s.residual != c.residual,
            s.norm != c.norm,
            s.causal_mask != c.causal_mask,
            s.padding_mask != c.padding_mask,
            s.warmup != c.warmup,
            s.embedding_init != c.embedding_init,
            s.linear_init != c.linear_init,
            v.num_heads.is_some(),
            v.dropout.is_some(),
        ];
        let n = changed.iter().filter(|&&c| c).count();
        let grid = v.name == "init-both-default";
        assert_eq!(
            n,
            if grid { 2 } else { 1 },
            "{} changes {n} things",
            v.name
        );
    }
    let positions: Vec<Position> =
        VARIANTS.iter().map(|v| v.switches.position).collect();
    assert!(
        positions.contains(&Position::None)
            && positions.contains(&Position::Learned)
    );
}

const ABLATION: &str = env!("CARGO_BIN_EXE_ablation");

/// A fresh folder of the system's temporary folder, for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("ablation-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_quick_study_runs_every_variant_end_to_end() {
    let dir = scratch("quick");
    let out = std::process::Command::new(ABLATION)
        .args(["--quick", "--jobs", "2", "--out-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("budget: 20 steps"), "{stdout}");
    for v in &VARIANTS {
        // Once in the table of runs, once in the summary, and but for the
        // reference itself once in the test across seeds.
        let rows = stdout
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(v.name))
            .count();
        let want = if v.name == "course" { 2 } else { 3 };
        assert_eq!(rows, want, "{}: {rows} rows in\n{stdout}", v.name);
    }
    assert!(stdout.contains("shown the answer (teacher forcing)"));
    assert!(stdout.contains("wall time of the study"));
    assert!(stdout.contains("across seeds: variant minus reference"));
    for figure in ["ablation_loss.svg", "ablation_no_position_attention.svg"] {
        let svg = std::fs::read_to_string(dir.join(figure)).unwrap();
        assert!(svg.starts_with("<svg"), "{figure} is not an SVG");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the study with `args`, which it must refuse; returns what it said.
fn refused(args: &[&str]) -> String {
    let out = std::process::Command::new(ABLATION)
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} was not refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unknown_variant_is_refused_with_the_list_of_variants() {
    let stderr = refused(&["--quick", "--only", "no-attention"]);
    assert!(stderr.contains("no variant 'no-attention'"), "{stderr}");
    assert!(stderr.contains("no-position, learned-position"), "{stderr}");
}

#[test]
fn a_study_can_start_at_a_later_seed() {
    let dir = scratch("first-seed");
    let out = std::process::Command::new(ABLATION)
        .args([
            "--quick",
            "--first-seed",
            "7",
            "--only",
            "no-warmup",
            "--out-dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("1 seed(s) per variant (seed 7)"),
        "{stdout}"
    );
    // The table of runs: both runs trained from seed 7, none from seed 0.
    let seeds: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            matches!(l.split_whitespace().next(), Some("course" | "no-warmup"))
        })
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|s| s.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(seeds, ["7", "7"], "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);

    let stderr = refused(&["--quick", "--first-seed", "1001"]);
    assert!(stderr.contains("--first-seed"), "{stderr}");
}
