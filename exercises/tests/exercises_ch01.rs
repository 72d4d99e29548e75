//! Chapter 01 exercises: `cargo test --test exercises_ch01`. The checks are behaviour,
//! so any correct solution passes, however it is written.
mod common;

use common::{assert_close, build, config, seeded};
use exercises::ch01_embedding::{
    position_table_by_loops, shift_position_row, LearnedPositions,
};
use rstest::rstest;
use tch::nn::OptimizerConfig;
use tch::{nn, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::embedding::sinusoidal_position_encoding;
use transformer_course::vocab::PAD_ID;

#[rstest]
#[case(14, 128)]
#[case(50, 8)]
#[case(1, 2)]
fn ex01_table_by_loops_equals_the_tensor_version(
    #[case] max_len: i64,
    #[case] d_model: i64,
) {
    let mine = position_table_by_loops(max_len, d_model);
    assert_eq!(
        mine.kind(),
        Kind::Float,
        "the table should be f32 (Vec<f32>)"
    );
    assert_close(
        &mine,
        &sinusoidal_position_encoding(max_len, d_model),
        1e-5,
        &format!(
            "differs from sinusoidal_position_encoding ({max_len} × {d_model}): {}",
            table_mistake(&mine, max_len, d_model)
        ),
    );
}

/// The usual mistake a wrong table matches, named: each is the course's table
/// moved the way the mistake moves it.
fn table_mistake(mine: &Tensor, max_len: i64, d_model: i64) -> &'static str {
    let longer = sinusoidal_position_encoding(max_len + 1, d_model);
    let table = longer.narrow(0, 0, max_len);
    let pairs = table.view([max_len, d_model / 2, 2]);
    let matches = |t: Tensor| {
        mine.size() == t.size() && mine.allclose(&t, 1e-5, 1e-5, false)
    };
    if matches(pairs.transpose(1, 2).reshape([max_len, d_model])) {
        "every sine in the first half of the row and every cosine in the second; the \
         paper interleaves them: column 2i holds pair i's sine, column 2i+1 its cosine"
    } else if matches(pairs.flip([2]).reshape([max_len, d_model])) {
        "cos in the even columns and sin in the odd ones: it is the other way round"
    } else if matches(longer.narrow(0, 1, max_len)) {
        "row 0 holds position 1: positions count from 0"
    } else {
        "is the exponent 2i/d_model, with i the pair (not the column) and d_model the \
         argument (not the course's 128)?"
    }
}

#[rstest]
#[case(0, 1)]
#[case(3, 5)]
#[case(10, -7)]
#[case(20, 13)]
#[case(40, 0)]
fn ex01_shift_by_rotation_moves_a_row_by_k_positions(
    #[case] p: i64,
    #[case] k: i64,
) {
    let table = sinusoidal_position_encoding(64, 16);
    let row = table.get(p).copy();
    let moved = shift_position_row(&row, k);
    assert_close(
        &moved,
        &table.get(p + k),
        1e-4,
        &format!(
            "pe[{p}] shifted by {k} is not pe[{}]: check the signs of the angle-addition \
             formulas and the frequency of each pair",
            p + k
        ),
    );
    common::assert_unchanged(&table.get(p), &row, "row");
}

#[test]
fn ex01_shift_by_rotation_works_at_the_course_width() {
    let table = sinusoidal_position_encoding(14, 128);
    for (p, k) in [(0, 13), (5, 2), (13, -13)] {
        assert_close(
            &shift_position_row(&table.get(p), k),
            &table.get(p + k),
            1e-4,
            &format!("d_model 128, p = {p}, k = {k}: are the frequencies those of the table?"),
        );
    }
}

/// Rows that are no row of the table: each pair at an angle of its own. Shifting
/// is a rotation of each pair by k·ω_i, which turns these the same way; reading p
/// off a table row and writing pe[p + k] from the formula does not.
#[test]
fn ex01_shift_by_rotation_turns_any_pairs_not_only_table_rows() {
    let d = 16;
    let omega = |i: i64| 10000f64.powf(-2.0 * i as f64 / d as f64);
    for (spread, k) in [(0.9, 3i64), (2.3, -5), (1.7, 11)] {
        let phase = |i: i64| spread * (i * i + 1) as f64;
        let pairs = |turn: i64| -> Vec<f32> {
            (0..d / 2)
                .flat_map(|i| {
                    let a = phase(i) + turn as f64 * omega(i);
                    [a.sin() as f32, a.cos() as f32]
                })
                .collect()
        };
        let row = Tensor::from_slice(&pairs(0));
        assert_close(
            &shift_position_row(&row, k),
            &Tensor::from_slice(&pairs(k)),
            1e-4,
            &format!(
                "pairs at unrelated angles (no row of the table), shifted by {k}: each \
                 (sin a, cos a) pair should turn by k·ω_i whatever its a. Reading p off \
                 the row and writing pe[p + k] from the formula is not a rotation"
            ),
        );
    }
}

/// max_len 19 and vocabularies 11 and 13 in the config, none of them the size the
/// tests pass (17) and max_len not the course's 14: a table sized by the config's
/// vocabulary, the course's vocabulary or the course's max_len then shows.
fn learned_config(dropout: f64) -> TransformerConfig {
    TransformerConfig {
        d_model: 16,
        max_len: LEARNED_MAX_LEN,
        src_vocab: 11,
        tgt_vocab: 13,
        dropout,
        ..config(16, 4, 32)
    }
}

const LEARNED_VOCAB: i64 = 17;
const LEARNED_MAX_LEN: i64 = 19;

/// The standard deviation of the token table's rows past PAD.
fn token_rows_std(layer: &LearnedPositions) -> f64 {
    let rows = layer.emb.ws.narrow(0, 1, LEARNED_VOCAB - 1);
    rows.std(true).double_value(&[])
}

/// A LearnedPositions for 17 tokens, d_model 16, max_len 19, built from `seed`.
fn learned(seed: i64, dropout: f64) -> (nn::VarStore, LearnedPositions) {
    build(seed, |p| {
        LearnedPositions::new(p, LEARNED_VOCAB, &learned_config(dropout))
    })
}

#[test]
fn ex01_learned_new_makes_a_trained_table() {
    let (vs, layer) = learned(0, 0.0);
    assert_eq!(
        layer.pos.size(),
        vec![LEARNED_MAX_LEN, 16],
        "pos must be [cfg.max_len, cfg.d_model] (the test's config has max_len 19)"
    );
    assert_eq!(
        layer.emb.ws.size(),
        vec![LEARNED_VOCAB, 16],
        "the token table must have vocab_size rows, the size passed to new (17 here; the \
         config's vocabularies are 11 and 13)"
    );
    assert!(
        layer.pos.requires_grad(),
        "the table must be trained: make it with p.var"
    );
    let vars = vs.trainable_variables();
    assert_eq!(
        vars.len(),
        2,
        "the VarStore should hold the token embedding and the table"
    );
    let total: i64 = vars.iter().map(|t| t.numel() as i64).sum();
    assert_eq!(
        total,
        (LEARNED_VOCAB + LEARNED_MAX_LEN) * 16,
        "parameters: 17·16 token + 19·16 position"
    );
    let pad_row = layer
        .emb
        .ws
        .get(PAD_ID)
        .abs()
        .sum(Kind::Float)
        .double_value(&[]);
    assert_eq!(
        pad_row, 0.0,
        "the PAD row must start at zero, as TokenAndPosition's does"
    );
    let std = token_rows_std(&layer);
    assert!(
        (std * 4.0 - 1.0).abs() < 0.25,
        "paper init: token rows N(0, 1/d) = std 0.25 for d = 16, got std {std:.3}: reuse \
         TokenAndPosition's embedding"
    );
    let pos_std = layer.pos.std(true).double_value(&[]);
    assert!(
        pos_std > 1e-3 && pos_std < 0.1,
        "the table should start small and random, std {pos_std}"
    );
}

#[rstest]
fn ex01_learned_forward_adds_the_table(#[values(0, 4)] seed: i64) {
    let (_vs, layer) = learned(seed, 0.0);
    // One token per row first: there, adding all max_len rows of the table broadcasts
    // to [B, max_len, d] instead of failing on the shapes.
    let one = layer.forward(&common::ids(&[&[3], &[7]]), false);
    assert_eq!(
        one.size(),
        vec![2, 1, 16],
        "ids [2, 1] gave {:?}: a batch of length L uses only the first L rows of the \
         table (pos[0..L]), not all max_len of them",
        one.size()
    );
    let ids = common::ids(&[&[3, 4, 5, 0], &[7, 7, 7, 2]]);
    let out = layer.forward(&ids, false);
    let expected = ids.apply(&layer.emb) * 4.0 + layer.pos.narrow(0, 0, 4);
    assert_close(
        &out,
        &expected,
        1e-6,
        "forward is not emb(ids)·√d_model + pos[0..L]: the scale, or the rows of the table?",
    );
    let row = out.get(1);
    let d = (row.get(0) - row.get(1)).abs().max().double_value(&[]);
    assert!(
        d > 1e-3,
        "the same token at two positions got the same vector: no positions?"
    );
}

#[test]
fn ex01_learned_forward_drops_out_only_in_training() {
    let (_vs, layer) = learned(5, 0.5);
    let ids = common::ids(&[&[3, 4, 5, 6], &[7, 8, 9, 2]]);
    let expected = ids.apply(&layer.emb) * 4.0 + layer.pos.narrow(0, 0, 4);
    assert_close(
        &layer.forward(&ids, false),
        &expected,
        1e-6,
        "with train = false there must be no dropout",
    );
    // With the same seed, dropout zeroes the same entries as dropout on the formula.
    let got = seeded(11, || layer.forward(&ids, true));
    let want = seeded(11, || expected.dropout(0.5, true));
    assert_close(
        &got,
        &want,
        1e-6,
        "in training, the output should be dropout(emb·√d + pos, p) with the layer's p",
    );
}

#[test]
fn ex01_learned_forward_trains_only_the_rows_it_saw() {
    let (vs, layer) = learned(1, 0.0);
    let before = layer.pos.copy();
    let mut opt = nn::Adam::default().build(&vs, 1e-2).unwrap();
    let ids = common::ids(&[&[3, 4, 5], &[6, 7, 8]]);
    for _ in 0..3 {
        let loss = layer
            .forward(&ids, true)
            .pow_tensor_scalar(2)
            .sum(Kind::Float);
        opt.backward_step(&loss);
    }
    let moved =
        (&layer.pos - &before)
            .abs()
            .sum_dim_intlist(1, false, Kind::Float);
    for r in 0..LEARNED_MAX_LEN {
        let m = moved.double_value(&[r]);
        if r < 3 {
            assert!(m > 0.0, "row {r} of the table was used but did not learn: is pos a variable?");
        } else {
            assert_eq!(
                m, 0.0,
                "row {r} was never used but moved: use only the first L rows"
            );
        }
    }
}

#[test]
fn ex01_learned_new_keeps_the_init_choice() {
    let cfg = TransformerConfig {
        init: Init::FrameworkDefault,
        ..learned_config(0.0)
    };
    let (_vs, layer) =
        build(2, |p| LearnedPositions::new(p, LEARNED_VOCAB, &cfg));
    let std = token_rows_std(&layer);
    assert!(
        (std - 1.0).abs() < 0.25,
        "framework-default init: token rows N(0, 1), got std {std:.3}: use cfg.init the way \
         TokenAndPosition does"
    );
}

#[test]
fn ex01_table_by_loops_is_written_by_hand() {
    let loops =
        "compute each entry sin(p/10000^(2i/d)) or cos(..) in two loops, over \
                 positions and over pairs of columns, into a Vec<f32>";
    let layer = "an embedding layer holds the library's table (PAD rows are zero); build \
                 your own with loops";
    common::assert_not_called(
        "ex01_table_by_loops",
        &[
            ("sinusoidal_position_encoding", loops),
            ("TokenAndPosition::position_table", layer),
            ("TokenAndPosition::forward", layer),
        ],
        || exercises::ch01_embedding::position_table_by_loops(9, 6),
    );
}
