//! Chapter 01 exercises: `cargo test --test exercises_ch01`. The checks are behaviour,
//! so any correct solution passes, however it is written.
use rstest::rstest;
use tch::nn::OptimizerConfig;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::embedding::{sinusoidal_position_encoding, Init, PAD_ID};
use transformer_course::exercises::ch01_embedding::{position_table_by_loops, shift_position_row, LearnedPositions};

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[rstest]
#[case(14, 128)]
#[case(50, 8)]
#[case(1, 2)]
fn ex01_table_by_loops_equals_the_tensor_version(#[case] max_len: i64, #[case] d_model: i64) {
    let mine = position_table_by_loops(max_len, d_model);
    assert_eq!(mine.size(), vec![max_len, d_model]);
    assert_eq!(mine.kind(), Kind::Float);
    let d = max_abs_diff(&mine, &sinusoidal_position_encoding(max_len, d_model));
    assert!(d < 1e-5, "differs from sinusoidal_position_encoding by {d:e}");
}

#[rstest]
#[case(0, 1)]
#[case(3, 5)]
#[case(10, -7)]
#[case(20, 13)]
#[case(40, 0)]
fn ex01_rotation_moves_a_row_by_k_positions(#[case] p: i64, #[case] k: i64) {
    let table = sinusoidal_position_encoding(64, 16);
    let moved = shift_position_row(&table.get(p), k);
    assert_eq!(moved.size(), vec![16]);
    let d = max_abs_diff(&moved, &table.get(p + k));
    assert!(d < 1e-4, "pe[{p}] shifted by {k} misses pe[{}] by {d:e}", p + k);
}

#[test]
fn ex01_rotation_works_at_the_course_width() {
    let table = sinusoidal_position_encoding(14, 128);
    for (p, k) in [(0, 13), (5, 2), (13, -13)] {
        let d = max_abs_diff(&shift_position_row(&table.get(p), k), &table.get(p + k));
        assert!(d < 1e-4, "p={p} k={k}: {d:e}");
    }
}

fn learned(seed: i64, init: Init) -> (nn::VarStore, LearnedPositions) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let layer = LearnedPositions::new(vs.root(), 13, 16, 14, 0.0, init);
    (vs, layer)
}

#[test]
fn ex01_learned_table_is_a_trained_variable() {
    let (vs, layer) = learned(0, Init::Paper);
    assert_eq!(layer.pos.size(), vec![14, 16]);
    assert!(layer.pos.requires_grad(), "the table must be trained");
    let vars = vs.trainable_variables();
    assert_eq!(vars.len(), 2, "token embedding and position table, nothing else");
    let total: i64 = vars.iter().map(|t| t.numel() as i64).sum();
    assert_eq!(total, 13 * 16 + 14 * 16);
    assert_eq!(layer.emb.ws.get(PAD_ID).abs().sum(Kind::Float).double_value(&[]), 0.0, "the PAD row starts at zero");
    let std = layer.emb.ws.narrow(0, 1, 12).std(true).double_value(&[]);
    assert!((std * 4.0 - 1.0).abs() < 0.25, "paper init: token rows N(0, 1/d), got std {std}");
}

#[rstest]
fn ex01_learned_forward_adds_the_table(#[values(0, 4)] seed: i64) {
    let (_vs, layer) = learned(seed, Init::Paper);
    let ids = Tensor::from_slice(&[3i64, 4, 5, 0, 7, 7, 7, 2]).view([2, 4]);
    let out = layer.forward(&ids, false);
    assert_eq!(out.size(), vec![2, 4, 16]);
    let expected = ids.apply(&layer.emb) * 4.0 + layer.pos.narrow(0, 0, 4);
    let d = max_abs_diff(&out, &expected);
    assert!(d < 1e-6, "forward is not emb·√d + pos[..L]: {d:e}");
    // The same token at three positions gets three different vectors.
    let row = out.get(1);
    assert!(max_abs_diff(&row.get(0), &row.get(1)) > 1e-3);
}

#[test]
fn ex01_learned_table_learns_only_the_rows_it_saw() {
    let (vs, layer) = learned(1, Init::Paper);
    let before = layer.pos.copy();
    let mut opt = nn::Adam::default().build(&vs, 1e-2).unwrap();
    let ids = Tensor::from_slice(&[3i64, 4, 5, 6, 7, 8]).view([2, 3]);
    for _ in 0..3 {
        let loss = layer.forward(&ids, true).pow_tensor_scalar(2).sum(Kind::Float);
        opt.backward_step(&loss);
    }
    let moved = (&layer.pos - &before).abs().sum_dim_intlist(1, false, Kind::Float);
    for r in 0..14 {
        let m = moved.double_value(&[r]);
        if r < 3 {
            assert!(m > 0.0, "row {r} was used but did not move");
        } else {
            assert_eq!(m, 0.0, "row {r} was never used but moved");
        }
    }
}
