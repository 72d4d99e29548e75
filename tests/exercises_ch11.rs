//! Chapter 11 exercises: `cargo test --test exercises_ch11`.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::data::{encode_pair, SEQ_LEN};
use transformer_course::exercises::ch11_cross_attention::{anti_diagonal_score, attention_entropy, cross_attention_map};
use transformer_course::train::teacher_forcing;
use transformer_course::transformer::{make_causal_mask, make_padding_mask, Transformer, TransformerConfig};

fn model(seed: i64, layers: i64) -> (nn::VarStore, Transformer) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig { d_model: 32, num_heads: 4, dff: 64, num_layers: layers, dropout: 0.0, ..TransformerConfig::reverse_task() };
    let m = Transformer::new(vs.root(), cfg).unwrap();
    (vs, m)
}

fn example(digits: &[i64]) -> (Tensor, Tensor) {
    let (s, t) = encode_pair(digits);
    let (src, tgt) = (Tensor::from_slice(&s).view([1, SEQ_LEN as i64]), Tensor::from_slice(&t).view([1, SEQ_LEN as i64]));
    (src, teacher_forcing(&tgt).0)
}

#[rstest]
fn ex11_cross_map_is_the_last_layer_averaged_over_heads(#[values(1, 3)] layers: i64) {
    let (_vs, m) = model(layers, layers);
    let (src, tgt_in) = example(&[8, 1, 5, 9]);
    let map = cross_attention_map(&m, &src, &tgt_in);
    assert_eq!(map.size(), vec![SEQ_LEN as i64 - 1, SEQ_LEN as i64]);
    let expected = tch::no_grad(|| {
        let src_mask = make_padding_mask(&src);
        let memory = m.encoder.forward(&src, &src_mask, false);
        let self_mask = make_causal_mask(tgt_in.size()[1], Device::Cpu).logical_or(&make_padding_mask(&tgt_in));
        let (_, w) = m.decoder.forward_with_weights(&tgt_in, &memory, &self_mask, &src_mask, false);
        w.last().unwrap().cross_attn.get(0).mean_dim(0, false, Kind::Float)
    });
    assert!((&map - &expected).abs().max().double_value(&[]) < 1e-6, "not the last layer's head average");
    let sums = map.sum_dim_intlist(-1, false, Kind::Float);
    assert!((sums - 1.0).abs().max().double_value(&[]) < 1e-5, "every row is a distribution");
    assert_eq!(map.narrow(1, 5, SEQ_LEN as i64 - 5).abs().sum(Kind::Float).double_value(&[]), 0.0, "no weight on PAD");
}

#[rstest]
#[case(1)]
#[case(5)]
#[case(14)]
fn ex11_entropy_of_uniform_and_one_hot_rows(#[case] n: i64) {
    let uniform = Tensor::full([2, 3, n], 1.0 / n as f64, (Kind::Float, Device::Cpu));
    let h = attention_entropy(&uniform);
    assert_eq!(h.size(), vec![2, 3]);
    assert!((h - (n as f64).ln()).abs().max().double_value(&[]) < 1e-5, "uniform over {n} keys has entropy ln {n}");
    let one_hot = Tensor::zeros([4, n], (Kind::Float, Device::Cpu));
    let _ = one_hot.narrow(1, n - 1, 1).fill_(1.0);
    let h = attention_entropy(&one_hot);
    assert_eq!(h.isnan().any().int64_value(&[]), 0, "0·ln 0 must count as 0, not NaN");
    assert!(h.abs().max().double_value(&[]) < 1e-6);
}

#[test]
fn ex11_entropy_of_real_weights() {
    // Two keys with weights 0.25 and 0.75, then PAD keys at exactly 0.
    let w = Tensor::from_slice(&[0.25f32, 0.75, 0.0, 0.0]).view([1, 1, 4]);
    let expected = -(0.25f64 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
    assert!((attention_entropy(&w).double_value(&[0, 0]) - expected).abs() < 1e-6);
    // On a model: masked PAD columns must not turn into NaN, and no row beats ln(Ls).
    let (_vs, m) = model(0, 1);
    let (src, tgt_in) = example(&[3, 1, 4]);
    let h = attention_entropy(&cross_attention_map_reference(&m, &src, &tgt_in));
    assert_eq!(h.isnan().any().int64_value(&[]), 0);
    assert!(h.max().double_value(&[]) <= 4f64.ln() + 1e-5, "only 4 real source tokens: entropy ≤ ln 4");
}

/// Head-averaged cross-attention of layer 0, computed without the exercise.
fn cross_attention_map_reference(m: &Transformer, src: &Tensor, tgt_in: &Tensor) -> Tensor {
    tch::no_grad(|| {
        let (memory, src_mask) = m.encode(src, false);
        m.decode(tgt_in, &memory, &src_mask, false).1[0].get(0).mean_dim(0, false, Kind::Float)
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
    assert!((anti_diagonal_score(&one_hot_map(&ideal, lt, ls), n) - 1.0).abs() < 1e-9);
    // The copy task's diagonal is not the reversal (except where the two cross).
    let diagonal: Vec<i64> = (0..=n).collect();
    let crossings = (0..=n).filter(|&i| diagonal[i as usize] == ideal[i as usize]).count() as f64;
    let d = anti_diagonal_score(&one_hot_map(&diagonal, lt, ls), n);
    assert!((d - crossings / (n + 1) as f64).abs() < 1e-9, "diagonal map scored {d}");
    // Uniform over the n + 1 real source tokens.
    let uniform = Tensor::zeros([lt, ls], (Kind::Float, Device::Cpu));
    let _ = uniform.narrow(1, 0, n + 1).fill_(1.0 / (n + 1) as f64);
    assert!((anti_diagonal_score(&uniform, n) - 1.0 / (n + 1) as f64).abs() < 1e-6);
}

#[test]
fn ex11_anti_diagonal_score_reads_only_the_first_n_plus_one_rows() {
    let n = 4;
    let mut ideal: Vec<i64> = (0..n).rev().collect();
    ideal.push(n);
    let map = one_hot_map(&ideal, 13, 14);
    // Rows after the EOS row are the padded tail: whatever they hold does not count.
    let _ = map.narrow(0, 6, 7).fill_(0.5);
    assert!((anti_diagonal_score(&map, n) - 1.0).abs() < 1e-9);
    // Half the weight of one row moved elsewhere: the mean drops by 0.5/(n+1).
    let _ = map.get(2).get(ideal[2]).fill_(0.5);
    let _ = map.get(2).get(13).fill_(0.5);
    assert!((anti_diagonal_score(&map, n) - (1.0 - 0.5 / 5.0)).abs() < 1e-6);
}
