//! Chapter 14 exercises: `cargo test --test exercises_ch14`.
mod common;

use common::{init, model_with, randn, tiny_config};
use exercises::ch10_greedy_decode::beam_search;
use exercises::ch14_dates::{compare_decoders, peak_alignment, Comparison};
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::dates::{
    dataset, draw, Field, Part, Sample, Split, Vocab, SPLIT_SEED, SRC_LEN,
    TGT_LEN,
};
use transformer_course::generate::{greedy_decode, sign_test_p_value};
use transformer_course::transformer::Transformer;
use transformer_course::viz::every_weight;

/// `n` held-out samples, the chapter's split and test seed.
fn samples(n: usize) -> Vec<Sample> {
    init();
    draw(&Split::new(SPLIT_SEED).dates(Part::Test), n, 2)
}

fn vocabularies(samples: &[Sample]) -> (Vocab, Vocab) {
    let texts: Vec<&str> = samples.iter().map(|s| s.text.as_str()).collect();
    (Vocab::from_texts(texts), Vocab::from_texts(["0123456789-"]))
}

/// Where every row of one head peaks, found one row at a time, and the share
/// of a field's rows that peak inside its span.
fn peak_reference(cross: &Tensor, samples: &[Sample]) -> Vec<[f64; 3]> {
    let heads = cross.size()[1];
    (0..heads)
        .map(|h| {
            Field::ALL.map(|f| {
                let mut hits = 0;
                for (b, s) in samples.iter().enumerate() {
                    for k in f.iso_chars() {
                        let row = cross.get(b as i64).get(h).get(k as i64);
                        let row =
                            Vec::<f64>::try_from(row.to_kind(Kind::Double))
                                .unwrap();
                        let peak = (0..row.len())
                            .max_by(|&i, &j| row[i].total_cmp(&row[j]))
                            .unwrap();
                        hits += usize::from(s.span(f).contains(&peak));
                    }
                }
                hits as f64 / (samples.len() * f.iso_chars().len()) as f64
            })
        })
        .collect()
}

/// Weights [N, h, T, S] for `samples`: each row a softmax of `scores`, with the
/// columns past a sample's EOS at exactly 0, as the padding mask leaves them.
fn weights_from(scores: &Tensor, samples: &[Sample]) -> Tensor {
    let mut mask = vec![0f32; samples.len() * SRC_LEN];
    for (b, s) in samples.iter().enumerate() {
        for c in s.pieces.len() + 1..SRC_LEN {
            mask[b * SRC_LEN + c] = f32::NEG_INFINITY;
        }
    }
    let n = samples.len() as i64;
    let mask = Tensor::from_slice(&mask).view([n, 1, 1, SRC_LEN as i64]);
    (scores + mask).softmax(-1, Kind::Float)
}

#[rstest]
fn ex14_peak_alignment_matches_the_rows_counted_one_by_one(
    #[values(0, 1, 2)] seed: i64,
) {
    let s = samples(12);
    let scores = randn(seed, &[12, 3, TGT_LEN as i64 - 1, SRC_LEN as i64]);
    let cross = weights_from(&(scores * 3.0), &s);
    let got = peak_alignment(&cross, &s);
    assert_eq!(got.len(), 3, "one [year, month, day] per head");
    assert_eq!(
        got,
        peak_reference(&cross, &s),
        "for every head and field: the share of the field's rows (ISO characters \
         Field::iso_chars, row k writes character k) whose largest weight lies in \
         Sample::span"
    );
}

#[test]
fn ex14_peak_alignment_counts_where_a_row_peaks_not_its_mass() {
    // Every row puts 0.4 on EOS and 0.6 spread evenly over the year's pieces, so
    // the year's words hold most of the mass, and no row peaks on them.
    let s: Vec<Sample> = samples(40)
        .into_iter()
        .filter(|s| s.span(Field::Year).len() >= 4)
        .collect();
    let mut w = vec![0f32; s.len() * (TGT_LEN - 1) * SRC_LEN];
    for (b, sample) in s.iter().enumerate() {
        let span = sample.span(Field::Year);
        for k in 0..TGT_LEN - 1 {
            let row = &mut w[(b * (TGT_LEN - 1) + k) * SRC_LEN..][..SRC_LEN];
            row[sample.pieces.len()] = 0.4;
            for c in span.clone() {
                row[c] = 0.6 / span.len() as f32;
            }
        }
    }
    let shape = [s.len() as i64, 1, TGT_LEN as i64 - 1, SRC_LEN as i64];
    let cross = Tensor::from_slice(&w).view(shape);
    let got = peak_alignment(&cross, &s);
    assert_eq!(
        got[0][0], 0.0,
        "60 % of every row's weight is on the year's pieces, but every row peaks on \
         EOS (0.4 against at most 0.15 per year piece): count the rows whose argmax is \
         in the span, not the weight on it (that is chapter 14's field_attention)"
    );
}

#[test]
fn ex14_peak_alignment_row_k_writes_character_k() {
    // Row k peaks on the span of the field of ISO character k; the hyphens'
    // rows (4 and 7) peak on EOS. Shifting the rows by one moves peaks out.
    let s = samples(10);
    let mut w = vec![0f32; s.len() * (TGT_LEN - 1) * SRC_LEN];
    for (b, sample) in s.iter().enumerate() {
        for k in 0..TGT_LEN - 1 {
            let row = &mut w[(b * (TGT_LEN - 1) + k) * SRC_LEN..][..SRC_LEN];
            let field =
                Field::ALL.into_iter().find(|f| f.iso_chars().contains(&k));
            let peak =
                field.map_or(sample.pieces.len(), |f| sample.span(f).start);
            row[peak] = 1.0;
        }
    }
    let shape = [s.len() as i64, 1, TGT_LEN as i64 - 1, SRC_LEN as i64];
    let got = peak_alignment(&Tensor::from_slice(&w).view(shape), &s);
    assert_eq!(
        got,
        vec![[1.0, 1.0, 1.0]],
        "every row peaks on its own field's words here: row k of the decoder is the \
         query that writes ISO character k (row 0 reads BOS and writes the year's \
         first digit), so the year is rows 0-3, the month 5-6, the day 8-9"
    );
}

#[test]
fn ex14_peak_alignment_on_a_models_weights() {
    let s = samples(16);
    let (src_vocab, tgt_vocab) = vocabularies(&s);
    let (_vs, model) = date_model(&src_vocab, &tgt_vocab, 4);
    let data = dataset(&s, &src_vocab, &tgt_vocab).unwrap();
    let tgt_in = data.tgt.narrow(1, 0, TGT_LEN as i64 - 1);
    let (_, layers) = every_weight(&model, &data.src, &tgt_in);
    for layer in &layers {
        assert_eq!(
            peak_alignment(&layer.cross_attn, &s),
            peak_reference(&layer.cross_attn, &s)
        );
    }
}

/// A random date model of the tiny size, two layers.
fn date_model(
    src: &Vocab,
    tgt: &Vocab,
    seed: i64,
) -> (nn::VarStore, Transformer) {
    let cfg = TransformerConfig {
        src_vocab: src.len(),
        tgt_vocab: tgt.len(),
        max_len: SRC_LEN as i64,
        ..tiny_config(2)
    };
    model_with(cfg, seed)
}

/// A model, its rows, and what greedy decoding and a beam of `width` write for
/// each: the material of the comparison tests. The beam is ex10_beam_search's,
/// the one the exercise asks to use (the grader puts the reference in its place
/// when it grades this exercise, so a mistake there costs only ex10).
struct Decoded {
    _vs: nn::VarStore,
    model: Transformer,
    src: Tensor,
    tgt: Vocab,
    greedy: Vec<String>,
    beam: Vec<String>,
}

fn decoded(seed: i64, width: usize) -> Decoded {
    let s = samples(24);
    let (src_vocab, tgt) = vocabularies(&s);
    let (vs, model) = date_model(&src_vocab, &tgt, seed);
    let src = dataset(&s, &src_vocab, &tgt).unwrap().src;
    let rows = greedy_decode(&model, &src, TGT_LEN).to_device(Device::Cpu);
    let greedy = (0..s.len() as i64)
        .map(|i| tgt.decode(&Vec::<i64>::try_from(rows.get(i)).unwrap()))
        .collect();
    let beam = (0..s.len() as i64)
        .map(|i| {
            let one = src.narrow(0, i, 1);
            tgt.decode(&beam_search(&model, &one, width, TGT_LEN).0)
        })
        .collect();
    Decoded {
        _vs: vs,
        model,
        src,
        tgt,
        greedy,
        beam,
    }
}

#[test]
fn ex14_beam_dates_of_width_one_never_disagrees_with_greedy() {
    let d = decoded(7, 1);
    // The truth: what greedy writes on even rows, nothing either writes on odd.
    let truth: Vec<String> = (0..d.greedy.len())
        .map(|i| {
            if i % 2 == 0 {
                d.greedy[i].clone()
            } else {
                "1900-01-01".into()
            }
        })
        .collect();
    let got = compare_decoders(&d.model, &d.src, &truth, &d.tgt, 1);
    let right = d.greedy.len().div_ceil(2);
    assert_eq!(
        got,
        Comparison {
            greedy_right: right,
            beam_right: right,
            only_greedy: 0,
            only_beam: 0,
            p_value: 1.0
        },
        "a beam of width 1 is greedy decoding: both right on the same rows, no \
         disagreement, and a sign test on no disagreement gives p = 1"
    );
}

#[rstest]
fn ex14_beam_dates_counts_the_rows_each_decoder_alone_gets_right(
    #[values(7, 8)] seed: i64,
) {
    let d = decoded(seed, 3);
    let differ: Vec<usize> = (0..d.greedy.len())
        .filter(|&i| d.greedy[i] != d.beam[i])
        .collect();
    assert!(
        differ.len() >= 4,
        "test bug: greedy and beam differ on {differ:?} only"
    );
    // Of the rows where they differ, the truth is the beam's on all but one, where
    // it is greedy's; where they agree, it is their answer on even rows.
    let truth: Vec<String> = (0..d.greedy.len())
        .map(|i| match differ.iter().position(|&r| r == i) {
            Some(0) => d.greedy[i].clone(),
            Some(_) => d.beam[i].clone(),
            None if i % 2 == 0 => d.greedy[i].clone(),
            None => "1900-01-01".into(),
        })
        .collect();
    let agree_right = (0..d.greedy.len())
        .filter(|&i| d.greedy[i] == d.beam[i] && i % 2 == 0)
        .count();
    let (only_greedy, only_beam) = (1, differ.len() - 1);
    let want = Comparison {
        greedy_right: agree_right + only_greedy,
        beam_right: agree_right + only_beam,
        only_greedy,
        only_beam,
        p_value: sign_test_p_value(only_greedy, only_beam),
    };
    let got = compare_decoders(&d.model, &d.src, &truth, &d.tgt, 3);
    assert_eq!(
        (got.greedy_right, got.beam_right),
        (want.greedy_right, want.beam_right),
        "rows right: greedy decoding with greedy_decode, the beam with your \
         ex10_beam_search of the width asked for, both written as text"
    );
    assert_eq!(
        (got.only_greedy, got.only_beam),
        (want.only_greedy, want.only_beam),
        "the rows only one decoder gets right, counted row by row: a difference of \
         the two totals hides the rows that go each way"
    );
    assert_eq!(
        got.p_value, want.p_value,
        "the p-value of the paired comparison: chapter 11's sign test on the rows \
         that disagree ({only_greedy} one way, {only_beam} the other), not a test of \
         two independent rates"
    );
}
