//! Chapter 11 exercises: `cargo test --test exercises_ch11`.
mod common;

use common::{assert_close, assert_close_f64, eval_model, EVAL};
use exercises::ch11_cross_attention::{
    anti_diagonal_score, attention_entropy, cross_attention_map,
};
use rstest::rstest;
use tch::{Device, Kind, Tensor};
use transformer_course::data::encode_pair;
use transformer_course::train::teacher_forcing;
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask, Transformer,
};
use transformer_course::vocab::SEQ_LEN;

fn example(digits: &[i64]) -> (Tensor, Tensor) {
    let (s, t) = encode_pair(digits);
    let shape = [1, SEQ_LEN as i64];
    let (src, tgt) = (
        Tensor::from_slice(&s).view(shape),
        Tensor::from_slice(&t).view(shape),
    );
    (src, teacher_forcing(&tgt).0)
}

#[rstest]
fn ex11_cross_map_is_the_last_layer_averaged_over_heads(
    #[values(1, 2, 3)] layers: i64,
) {
    let (_vs, m) = eval_model(layers, layers);
    let (src, tgt_in) = example(&[8, 1, 5, 9]);
    let map = cross_attention_map(&m, &src, &tgt_in);
    let expected = tch::no_grad(|| {
        let src_mask = make_padding_mask(&src);
        let memory = m.encoder.forward(&src, &src_mask, false);
        let tgt_mask = make_target_mask(&tgt_in);
        let (_, w) = m.decoder.forward_with_weights(
            &tgt_in, &memory, &tgt_mask, &src_mask, false,
        );
        w.last()
            .unwrap()
            .cross_attn
            .get(0)
            .mean_dim(0, false, Kind::Float)
    });
    assert_close(
        &map,
        &expected,
        1e-6,
        &format!(
            "{layers} layer(s): not the last layer's cross-attention, averaged over the heads \
             (dimension 0 once the batch is dropped), [Lt, Ls] {EVAL}"
        ),
    );
    let sums = map.sum_dim_intlist(-1, false, Kind::Float);
    assert_close(
        &sums,
        &Tensor::ones_like(&sums),
        1e-5,
        "every row of the map must be a distribution",
    );
    let on_pad = map
        .narrow(1, 5, SEQ_LEN as i64 - 5)
        .abs()
        .sum(Kind::Float)
        .double_value(&[]);
    assert_eq!(
        on_pad, 0.0,
        "weight on source PAD: is it the cross-attention (not self-attention)?"
    );
}

#[rstest]
#[case(1)]
#[case(5)]
#[case(14)]
fn ex11_entropy_of_uniform_and_one_hot_rows(#[case] n: i64) {
    let uniform =
        Tensor::full([2, 3, n], 1.0 / n as f64, (Kind::Float, Device::Cpu));
    let h = attention_entropy(&uniform);
    let ln_n =
        Tensor::full([2, 3], (n as f64).ln(), (Kind::Float, Device::Cpu));
    assert_close(
        &h,
        &ln_n,
        1e-5,
        &format!("uniform over {n} keys has entropy ln {n} (nats: natural log), one per row [..]"),
    );
    let one_hot = Tensor::zeros([4, n], (Kind::Float, Device::Cpu));
    let _ = one_hot.narrow(1, n - 1, 1).fill_(1.0);
    let h = attention_entropy(&one_hot);
    assert_eq!(
        h.isnan().any().int64_value(&[]),
        0,
        "NaN: 0·ln 0 must count as 0 (xlogy, or clamp)"
    );
    assert_close(
        &h,
        &Tensor::zeros([4], (Kind::Float, Device::Cpu)),
        1e-6,
        "a one-hot row has entropy 0",
    );
}

#[test]
fn ex11_entropy_of_real_weights() {
    // Two keys with weights 0.25 and 0.75, then PAD keys at exactly 0.
    let w = Tensor::from_slice(&[0.25f32, 0.75, 0.0, 0.0]).view([1, 1, 4]);
    let expected = -(0.25f64 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
    let got = attention_entropy(&w);
    assert_eq!(
        got.size(),
        vec![1, 1],
        "one entropy per row: sum over the last dimension"
    );
    assert_close_f64(
        got.double_value(&[0, 0]),
        expected,
        1e-6,
        "weights 0.25, 0.75, 0, 0",
    );
    // On a model: masked PAD columns must not turn into NaN, and no row beats ln(Ls).
    let (_vs, m) = eval_model(0, 1);
    let (src, tgt_in) = example(&[3, 1, 4]);
    let h =
        attention_entropy(&cross_attention_map_reference(&m, &src, &tgt_in));
    assert_eq!(
        h.isnan().any().int64_value(&[]),
        0,
        "NaN on a real map (its PAD columns are 0)"
    );
    let most = h.max().double_value(&[]);
    assert!(
        most <= 4f64.ln() + 1e-5,
        "only 4 real source tokens: entropy ≤ ln 4, got {most}"
    );
}

#[test]
fn ex11_entropy_row_by_row() {
    // [2, 3, 5]: six different distributions, with keys at weight exactly 0 at the
    // start, in the middle and at the end, in fp64. Every row has its own entropy,
    // so a mean over rows, a sum over another dimension or a normalisation over the
    // whole tensor shows.
    let rows: [[f64; 5]; 6] = [
        [0.0, 0.5, 0.25, 0.25, 0.0],
        [0.7, 0.0, 0.1, 0.0, 0.2],
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.0, 0.0, 1.0, 0.0, 0.0],
        [0.05, 0.15, 0.3, 0.4, 0.1],
        [0.9, 0.1, 0.0, 0.0, 0.0],
    ];
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    let w = Tensor::from_slice(&flat).view([2, 3, 5]);
    let got = attention_entropy(&w);
    assert_eq!(
        got.size(),
        vec![2, 3],
        "[2, 3, 5] weights: one entropy per row, [2, 3]"
    );
    for (r, row) in rows.iter().enumerate() {
        let want: f64 =
            row.iter().filter(|&&p| p > 0.0).map(|&p| -p * p.ln()).sum();
        let (b, q) = (r as i64 / 3, r as i64 % 3);
        assert_close_f64(
            got.double_value(&[b, q]),
            want,
            1e-6,
            &format!(
                "row [{b}, {q}] = {row:?}: its own −Σ w ln w over the last dimension \
                 (keys at weight 0 add nothing, and no other row counts)"
            ),
        );
    }
}

/// Head-averaged cross-attention of layer 0, computed without the exercise.
fn cross_attention_map_reference(
    m: &Transformer,
    src: &Tensor,
    tgt_in: &Tensor,
) -> Tensor {
    tch::no_grad(|| {
        let (memory, src_mask) = m.encode(src, false);
        let (_, w) = m.decode_with_weights(
            tgt_in,
            &memory,
            &src_mask,
            make_causal_mask,
            false,
        );
        w[0].cross_attn.get(0).mean_dim(0, false, Kind::Float)
    })
}

/// A [Lt, Ls] map whose row i is one-hot at `cols[i]`.
fn one_hot_map(cols: &[i64], lt: i64, ls: i64) -> Tensor {
    let map = Tensor::zeros([lt, ls], (Kind::Float, Device::Cpu));
    for (i, &c) in cols.iter().enumerate() {
        let _ = map.get(i as i64).get(c).fill_(1.0);
    }
    map
}

#[rstest]
#[case(3)]
#[case(6)]
#[case(12)]
fn ex11_anti_diagonal_score_of_ideal_and_wrong_maps(#[case] n: i64) {
    let (lt, ls) = (SEQ_LEN as i64 - 1, SEQ_LEN as i64);
    // The reversal: row i looks at n−1−i, the EOS row at n.
    let mut ideal: Vec<i64> = (0..n).rev().collect();
    ideal.push(n);
    assert_close_f64(
        anti_diagonal_score(&one_hot_map(&ideal, lt, ls), n),
        1.0,
        1e-9,
        "a perfect reversal map scores 1: row i < n expects column n − 1 − i, row n column n",
    );
    // The copy task's diagonal is not the reversal (except where the two cross).
    let diagonal: Vec<i64> = (0..=n).collect();
    let crossings = (0..=n)
        .filter(|&i| diagonal[i as usize] == ideal[i as usize])
        .count() as f64;
    assert_close_f64(
        anti_diagonal_score(&one_hot_map(&diagonal, lt, ls), n),
        crossings / (n + 1) as f64,
        1e-9,
        "a diagonal map scores only where it crosses the anti-diagonal (mean over rows 0..=n)",
    );
    // Uniform over the n + 1 real source tokens.
    let uniform = Tensor::zeros([lt, ls], (Kind::Float, Device::Cpu));
    let _ = uniform.narrow(1, 0, n + 1).fill_(1.0 / (n + 1) as f64);
    assert_close_f64(
        anti_diagonal_score(&uniform, n),
        1.0 / (n + 1) as f64,
        1e-6,
        "a uniform map",
    );
}

#[test]
fn ex11_anti_diagonal_score_reads_only_the_first_n_plus_one_rows() {
    let n = 4;
    let mut ideal: Vec<i64> = (0..n).rev().collect();
    ideal.push(n);
    let map = one_hot_map(&ideal, 13, 14);
    // Rows after the EOS row are the padded tail: whatever they hold does not count.
    let _ = map.narrow(0, 6, 7).fill_(0.5);
    assert_close_f64(
        anti_diagonal_score(&map, n),
        1.0,
        1e-9,
        "rows after row n must not count",
    );
    // Half the weight of one row moved elsewhere: the mean drops by 0.5/(n+1).
    let _ = map.get(2).get(ideal[2]).fill_(0.5);
    let _ = map.get(2).get(13).fill_(0.5);
    assert_close_f64(
        anti_diagonal_score(&map, n),
        1.0 - 0.5 / 5.0,
        1e-6,
        "the score is the mean of the weights on the expected columns, not a count of argmaxes",
    );
}

#[test]
fn ex11_cross_map_is_written_by_hand() {
    let instead = "encode, run decode_with_weights with the causal mask, and average the \
                   last layer's cross_attn over the heads yourself";
    common::assert_written_by_hand(
        include_str!("../src/ch11_cross_attention.rs"),
        "ex11_cross_map",
        &[("every_weight", instead), ("attention_maps", instead)],
    );
}
