//! Chapter 11 exercises: `cargo test --test exercises_ch11`.
mod common;

use common::{assert_close, assert_close_f64, eval_model, EVAL};
use common::{global_rng, randn, tiny_config, tiny_model};
use exercises::ch11_cross_attention::{
    anti_diagonal_score, attention_entropy, check_head, cross_attention_map,
    find_previous_token_head, previous_token_score, FoundHead, HeadCheck,
};
use rstest::rstest;
use std::sync::{Mutex, OnceLock};
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::data::{encode_pair, make_dataset};
use transformer_course::generate::{correct_rows, sign_test_p_value};
use transformer_course::train::{fit, teacher_forcing, TrainOptions, Trainer};
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask, Transformer,
};
use transformer_course::viz::{
    attention_module, every_weight, with_head_off, AttentionKind,
};
use transformer_course::vocab::{BOS_ID, EOS_ID, PAD_ID, SEQ_LEN};
use workbench::kernels::{self, Bound};

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
// 2 and 8 heads besides the course's 4: a sum over the heads divided by 4 shows.
#[case(1, 2)]
#[case(2, 8)]
#[case(3, 4)]
fn ex11_cross_map_is_the_last_layer_averaged_over_heads(
    #[case] layers: i64,
    #[case] heads: i64,
) {
    let cfg = TransformerConfig {
        num_heads: heads,
        dropout: common::EVAL_DROPOUT,
        ..tiny_config(layers)
    };
    let (_vs, m) = common::model_with(cfg, layers);
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
            "{layers} layer(s), {heads} heads: not the last layer's cross-attention, \
             averaged over the heads (dimension 0 once the batch is dropped), [Lt, Ls] \
             {EVAL}"
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
    let (_vs, m) = tiny_model(5, 2);
    let (src, tgt_in) = example(&[8, 1, 5, 9]);
    common::assert_not_called(
        "ex11_cross_map",
        &[("every_weight", instead), ("attention_maps", instead)],
        || cross_attention_map(&m, &src, &tgt_in),
    );
}

// ---- ex11_find_a_head ----------------------------------------------------

/// Per head, the previous-token score written out with loops: the weight of
/// query i on key i − 1, over the queries at i ≥ 1 whose token is not PAD. The
/// variants are the mistakes the tests name: `Wrong` says which.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wrong {
    None,
    Diagonal,
    AboveDiagonal,
    PaddingQueries,
    PositionZero,
    MeanOfRowMeans,
    MeanOverKeys,
    KeyReal,
}

fn score_by_loops(w: &Tensor, tokens: &Tensor, wrong: Wrong) -> Vec<f64> {
    let (b, h, l, _) = w.size4().unwrap();
    let w = w.to_kind(Kind::Double);
    let tok = |bi: i64, i: i64| tokens.int64_value(&[bi, i]);
    (0..h)
        .map(|hi| {
            let mut per_row = Vec::new();
            let (mut sum, mut n) = (0.0, 0.0);
            for bi in 0..b {
                let (mut rs, mut rn) = (0.0, 0.0);
                for i in 0..l {
                    let counted = match wrong {
                        Wrong::PaddingQueries => i >= 1,
                        Wrong::PositionZero => tok(bi, i) != PAD_ID,
                        Wrong::KeyReal => i >= 1 && tok(bi, i - 1) != PAD_ID,
                        _ => i >= 1 && tok(bi, i) != PAD_ID,
                    };
                    if !counted {
                        continue;
                    }
                    let v = match wrong {
                        Wrong::Diagonal => w.double_value(&[bi, hi, i, i]),
                        Wrong::AboveDiagonal if i + 1 < l => {
                            w.double_value(&[bi, hi, i, i + 1])
                        }
                        Wrong::AboveDiagonal => 0.0,
                        Wrong::PositionZero if i == 0 => 0.0,
                        Wrong::MeanOverKeys => {
                            (0..l)
                                .map(|j| w.double_value(&[bi, hi, i, j]))
                                .sum::<f64>()
                                / l as f64
                        }
                        _ => w.double_value(&[bi, hi, i, i - 1]),
                    };
                    rs += v;
                    rn += 1.0;
                }
                sum += rs;
                n += rn;
                per_row.push(rs / rn);
            }
            if wrong == Wrong::MeanOfRowMeans {
                per_row.iter().sum::<f64>() / per_row.len() as f64
            } else {
                sum / n
            }
        })
        .collect()
}

const MISTAKES: [(Wrong, &str); 7] = [
    (Wrong::Diagonal, "the diagonal (key i, the query itself) instead of key i − 1"),
    (Wrong::AboveDiagonal, "key i + 1 instead of key i − 1: diagonal offset +1 instead of −1"),
    (Wrong::PaddingQueries, "the PAD queries count too: only real tokens are queries"),
    (Wrong::PositionZero, "position 0 counts (with 0): it has no previous token, leave it out"),
    (
        Wrong::MeanOfRowMeans,
        "a mean of each sequence's mean: every counted query must weigh the same, \
         whatever its sequence's length",
    ),
    (Wrong::MeanOverKeys, "an average over the keys: read one weight per query, at key i − 1"),
    (
        Wrong::KeyReal,
        "the queries are counted by their key's token (position i − 1), so the first PAD \
         query of a row counts: a query counts when its own token, at i, is real",
    ),
];

/// Checks `got` against the loops, naming the mistake it matches if it is wrong.
fn check_score(got: &[f64], w: &Tensor, tokens: &Tensor, what: &str) {
    let want = score_by_loops(w, tokens, Wrong::None);
    assert_eq!(got.len(), want.len(), "{what}: one score per head, [H]");
    let close = |a: &[f64], b: &[f64]| {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
    };
    if close(got, &want) {
        return;
    }
    for (wrong, says) in MISTAKES {
        if close(got, &score_by_loops(w, tokens, wrong)) {
            panic!("{what}: {says}. Got {got:?}, want {want:?}");
        }
    }
    panic!("{what}: got {got:?}, want {want:?} (the mean over real queries at positions ≥ 1 of the weight on key i − 1)");
}

/// Softmax rows of random scores with the PAD keys at weight exactly 0, as a
/// real layer gives them; `causal` also hides the keys after each query.
fn hand_weights(seed: i64, tokens: &Tensor, h: i64, causal: bool) -> Tensor {
    let (b, l) = tokens.size2().unwrap();
    let scores = randn(seed, &[b, h, l, l]) * 2.0;
    let mut hidden = tokens.eq(PAD_ID).view([b, 1, 1, l]);
    if causal {
        hidden = hidden
            .logical_or(&make_causal_mask(l, Device::Cpu).view([1, 1, l, l]));
    }
    scores
        .masked_fill(&hidden, f64::NEG_INFINITY)
        .softmax(-1, Kind::Float)
}

fn padded(rows: &[&[i64]]) -> Tensor {
    let l = rows.iter().map(|r| r.len()).max().unwrap();
    let flat: Vec<i64> = rows
        .iter()
        .flat_map(|r| {
            r.iter().copied().chain(std::iter::repeat(PAD_ID)).take(l)
        })
        .collect();
    Tensor::from_slice(&flat).view([rows.len() as i64, l as i64])
}

#[rstest]
#[case(false)]
#[case(true)]
fn ex11_find_a_head_score_of_random_weights_with_padding(#[case] causal: bool) {
    // Sequences of 6, 3 and 1 real tokens in a batch of length 7: PAD queries
    // and the rows' different lengths both change the number.
    let tokens = padded(&[
        &[BOS_ID, 8, 3, 9, 4, 12, EOS_ID],
        &[5, 7, EOS_ID],
        &[EOS_ID],
    ]);
    let w = hand_weights(11 + causal as i64, &tokens, 3, causal);
    let got = previous_token_score(&w, &tokens);
    check_score(
        &got,
        &w,
        &tokens,
        "random weights, 3 heads, PAD in two rows",
    );
}

#[test]
fn ex11_find_a_head_score_of_ideal_and_diagonal_heads() {
    let tokens = padded(&[&[6, 4, 9, 3, EOS_ID], &[7, 5, EOS_ID]]);
    let (b, l) = tokens.size2().unwrap();
    // Head 0 looks at the previous key (position 0 at itself), head 1 at itself.
    let prev = Tensor::eye(l, (Kind::Float, Device::Cpu)).roll([1], [0]);
    prev.get(0)
        .copy_(&Tensor::eye(l, (Kind::Float, Device::Cpu)).get(0));
    let eye = Tensor::eye(l, (Kind::Float, Device::Cpu));
    let w = Tensor::stack(&[prev, eye], 0)
        .unsqueeze(0)
        .expand([b, 2, l, l], false);
    let got = previous_token_score(&w, &tokens);
    check_score(
        &got,
        &w,
        &tokens,
        "head 0 on the previous key, head 1 on the query's own key",
    );
    assert!(
        (got[0] - 1.0).abs() < 1e-6 && got[1].abs() < 1e-6,
        "a perfect previous-token head scores 1 and a head on the diagonal 0, got {got:?}"
    );
}

/// The dimensions of the position table the planted head reads: three (sin, cos)
/// pairs, frequencies 1, 0.56 and 0.32 (d_model 32), and a reference dimension
/// whose value stays near 0 over 14 positions (sin of the lowest frequency).
const PLANT_PAIRS: [i64; 3] = [0, 1, 2];
const PLANT_REF: i64 = 30;

fn plant_dims() -> Vec<i64> {
    PLANT_PAIRS
        .iter()
        .flat_map(|&p| [2 * p, 2 * p + 1])
        .chain([PLANT_REF])
        .collect()
}

/// Zeroes rows `dims` of a Linear's output (weights and bias).
fn zero_out_rows(lin: &nn::Linear, dims: &[i64]) {
    tch::no_grad(|| {
        for &d in dims {
            let _ = lin.ws.get(d).zero_();
            if let Some(b) = &lin.bs {
                let _ = b.get(d).zero_();
            }
        }
    });
}

/// Weight 1 and bias 0 on dimensions `dims` of a LayerNorm.
fn pass_dims_through(ln: &nn::LayerNorm, dims: &[i64]) {
    for &d in dims {
        if let Some(ws) = &ln.ws {
            let _ = ws.get(d).fill_(1.0);
        }
        if let Some(bs) = &ln.bs {
            let _ = bs.get(d).zero_();
        }
    }
}

/// Makes head `head` of the self-attention in `layer` of the encoder or the
/// decoder (or of the decoder's cross-attention, keys from the source positions)
/// a previous-token head, by hand. The token embeddings are zeroed,
/// so that the residual stream starts as the position table, and the sub-layers below
/// write nothing into the residual stream (their attention weights are still
/// there for the finder to score), so it holds the sinusoid there; LayerNorm
/// subtracts one mean from all dimensions, which differences with the
/// reference dimension cancel, and divides by one number per position, which
/// only sharpens or softens (and is much the same from position to position:
/// every row of the table has the same sum of squares). The head's queries are those sinusoids rotated
/// back by one position (sin ω(i − 1), cos ω(i − 1)), its keys the sinusoids
/// (sin ωj, cos ωj): the scores Σ cos ω(i − 1 − j) peak at j = i − 1.
fn plant_previous_token_head(
    m: &Transformer,
    kind: AttentionKind,
    layer: usize,
    head: i64,
) {
    let dims = plant_dims();
    let d_model = m.config.d_model;
    let every_row: Vec<i64> = (0..d_model).collect();
    tch::no_grad(|| {
        for emb in [&m.encoder.embed.emb, &m.decoder.embed.emb] {
            let _ = emb.ws.shallow_clone().zero_();
        }
        for l in 0..m.config.num_layers as usize {
            let (below, lns): (Vec<&nn::Linear>, Vec<&nn::LayerNorm>) =
                match kind {
                    AttentionKind::EncoderSelf => {
                        let e = &m.encoder.layers[l];
                        (vec![&e.mha.W_o, &e.ffn.lin2], vec![&e.ln1])
                    }
                    _ => {
                        let d = &m.decoder.layers[l];
                        let ln = match kind {
                            AttentionKind::Cross => &d.ln2,
                            _ => &d.ln1,
                        };
                        (
                            vec![
                                &d.self_mha.W_o,
                                &d.cross_mha.W_o,
                                &d.ffn.lin2,
                            ],
                            vec![ln],
                        )
                    }
                };
            for ln in lns {
                pass_dims_through(ln, &dims);
            }
            if l < layer {
                for lin in below {
                    zero_out_rows(lin, &every_row);
                }
            }
        }
        if kind == AttentionKind::Cross {
            // The keys are the memory: with an encoder that writes nothing it is
            // its final LayerNorm of the position table. And the layer's own
            // self-attention writes nothing, so its queries read the table too.
            for e in &m.encoder.layers {
                zero_out_rows(&e.mha.W_o, &every_row);
                zero_out_rows(&e.ffn.lin2, &every_row);
            }
            pass_dims_through(&m.encoder.ln_final, &dims);
            zero_out_rows(&m.decoder.layers[layer].self_mha.W_o, &every_row);
        }
        let mha = attention_module(m, kind, layer);
        let d_k = mha.d_k;
        let rows = head * d_k..(head + 1) * d_k;
        let strength = 200.0;
        for lin in [&mha.W_q, &mha.W_k] {
            let _ = lin.ws.narrow(0, rows.start, d_k).zero_();
            if let Some(b) = &lin.bs {
                let _ = b.narrow(0, rows.start, d_k).zero_();
            }
        }
        for (k, &p) in PLANT_PAIRS.iter().enumerate() {
            let omega = 10000f64.powf(-2.0 * p as f64 / d_model as f64);
            let (c, s) = (omega.cos(), omega.sin());
            let (sin_d, cos_d) = (2 * p, 2 * p + 1);
            let (r_sin, r_cos) =
                (rows.start + 2 * k as i64, rows.start + 2 * k as i64 + 1);
            // key: (x_sin − x_ref, x_cos − x_ref)
            let wk = &mha.W_k.ws;
            let _ = wk.get(r_sin).get(sin_d).fill_(1.0);
            let _ = wk.get(r_sin).get(PLANT_REF).fill_(-1.0);
            let _ = wk.get(r_cos).get(cos_d).fill_(1.0);
            let _ = wk.get(r_cos).get(PLANT_REF).fill_(-1.0);
            // query: sin ω(i−1) = S·c − C·s, cos ω(i−1) = C·c + S·s
            let wq = &mha.W_q.ws;
            let set = |r: i64, a: f64, b: f64| {
                let _ = wq.get(r).get(sin_d).fill_(strength * a);
                let _ = wq.get(r).get(cos_d).fill_(strength * b);
                let _ = wq.get(r).get(PLANT_REF).fill_(-strength * (a + b));
            };
            set(r_sin, c, -s);
            set(r_cos, s, c);
        }
    });
}

fn reversal_batch(n: usize, seed: u64) -> (Tensor, Tensor, Tensor) {
    let data = make_dataset(n, seed);
    let (tgt_in, _) = teacher_forcing(&data.tgt);
    (data.src, data.tgt, tgt_in)
}

/// One inference pass gives every self-attention layer's weights; a pass per side
/// (or per layer) gives the same head at several times the cost.
#[test]
fn ex11_find_a_head_runs_one_pass() {
    let (_vs, m) = tiny_model(5, 2);
    let (src, _, tgt_in) = reversal_batch(8, 7);
    let (_, counts) =
        counted::watch(|| find_previous_token_head(&m, &src, &tgt_in));
    for pass in [
        "Encoder::forward_with_weights",
        "Decoder::forward_with_weights",
    ] {
        let n = counts.of(pass);
        assert!(
            n <= 1,
            "ex11_find_a_head_find ran {pass} {n} times: one inference pass \
             (viz::every_weight, once) returns every layer's weights, the encoder's \
             and the decoder's; score them all from that one pass"
        );
    }
}

#[rstest]
#[case(AttentionKind::EncoderSelf, 0, 2)]
#[case(AttentionKind::EncoderSelf, 1, 3)]
#[case(AttentionKind::DecoderSelf, 0, 1)]
#[case(AttentionKind::DecoderSelf, 1, 0)]
fn ex11_find_a_head_names_a_planted_previous_token_head(
    #[case] kind: AttentionKind,
    #[case] layer: usize,
    #[case] head: i64,
) {
    let (_vs, m) = tiny_model(5, 2);
    plant_previous_token_head(&m, kind, layer, head);
    let (src, _, tgt_in) = reversal_batch(32, 7);
    let found = find_previous_token_head(&m, &src, &tgt_in);
    // The planted head's score, from the weights of one inference pass.
    let (enc_w, dec_w) = every_weight(&m, &src, &tgt_in);
    let (w, tokens) = match kind {
        AttentionKind::EncoderSelf => (enc_w[layer].shallow_clone(), &src),
        _ => (dec_w[layer].self_attn.shallow_clone(), &tgt_in),
    };
    let planted = score_by_loops(&w, tokens, Wrong::None)[head as usize];
    assert!(
        planted > 0.9,
        "test bug: the planted head scores only {planted:.3}"
    );
    assert_eq!(
        (found.kind, found.layer, found.head),
        (kind, layer, head),
        "a previous-token head was planted in the {} attention of layer {layer}, head \
         {head} (it scores {planted:.3}); the finder named the {} attention of layer {}, \
         head {}, scoring {:.3}. Are both the encoder's and the decoder's self-attention \
         layers scored, every layer, and the highest score kept?",
        kind.name(),
        found.kind.name(),
        found.layer,
        found.head,
        found.score
    );
    assert_close_f64(
        found.score,
        planted,
        1e-5,
        "the score reported for the head found (its previous_token_score, inference mode)",
    );
}

/// (kind, layer, head, score) of every self-attention head, in the finder's order:
/// the encoder's layers, then the decoder's, heads in order.
fn self_attention_scores(
    m: &Transformer,
    src: &Tensor,
    tgt_in: &Tensor,
) -> Vec<(AttentionKind, usize, i64, f64)> {
    let (enc_w, dec_w) = every_weight(m, src, tgt_in);
    let mut scores = Vec::new();
    let mut add =
        |kind: AttentionKind, layer: usize, w: &Tensor, tokens: &Tensor| {
            let by_head = score_by_loops(w, tokens, Wrong::None);
            for (head, s) in by_head.into_iter().enumerate() {
                scores.push((kind, layer, head as i64, s));
            }
        };
    for (layer, w) in enc_w.iter().enumerate() {
        add(AttentionKind::EncoderSelf, layer, w, src);
    }
    for (layer, w) in dec_w.iter().enumerate() {
        add(AttentionKind::DecoderSelf, layer, &w.self_attn, tgt_in);
    }
    scores
}

#[rstest]
#[case(0, 1)]
#[case(1, 3)]
fn ex11_find_a_head_scores_self_attention_only(
    #[case] layer: usize,
    #[case] head: i64,
) {
    // A previous-token pattern planted in a cross-attention head, stronger than
    // any self-attention head: the exercise asks for self-attention heads only.
    let (_vs, m) = tiny_model(5, 2);
    plant_previous_token_head(&m, AttentionKind::Cross, layer, head);
    let (src, _, tgt_in) = reversal_batch(32, 7);
    let (_, dec_w) = every_weight(&m, &src, &tgt_in);
    let cross = score_by_loops(&dec_w[layer].cross_attn, &tgt_in, Wrong::None)
        [head as usize];
    let scored = self_attention_scores(&m, &src, &tgt_in);
    let mut best = scored[0];
    for s in &scored {
        if s.3 > best.3 {
            best = *s;
        }
    }
    assert!(
        cross > 0.9 && cross > best.3 + 0.1,
        "test bug: the planted cross-attention head scores {cross:.3}, the best \
         self-attention head {:.3}",
        best.3
    );
    let found = find_previous_token_head(&m, &src, &tgt_in);
    assert_eq!(
        (found.kind, found.layer, found.head),
        (best.0, best.1, best.2),
        "the cross-attention of layer {layer}, head {head}, looks at the source \
         position before each decoder position (score {cross:.3}), but the exercise \
         scores self-attention only: the best self-attention head is the {} attention \
         of layer {}, head {} ({:.3}); the finder named the {} attention of layer {}, \
         head {} ({:.3})",
        best.0.name(),
        best.1,
        best.2,
        best.3,
        found.kind.name(),
        found.layer,
        found.head,
        found.score
    );
}

#[test]
fn ex11_find_a_head_keeps_the_first_of_equal_scores() {
    // W_q and W_k of every self-attention zeroed: every score is 0, every row of
    // weights uniform over the keys its mask leaves, the same in every head of every
    // layer of a stack, so heads tie exactly. The statement's rule: the first one met
    // (encoder before decoder, lower layers and heads first). `max_by` and `>=` keep
    // the last.
    let (_vs, m) = tiny_model(5, 2);
    tch::no_grad(|| {
        let enc = m.encoder.layers.iter().map(|l| &l.mha);
        let dec = m.decoder.layers.iter().map(|l| &l.self_mha);
        for mha in enc.chain(dec) {
            for lin in [&mha.W_q, &mha.W_k] {
                let _ = lin.ws.shallow_clone().zero_();
                if let Some(b) = &lin.bs {
                    let _ = b.shallow_clone().zero_();
                }
            }
        }
    });
    let (src, _, tgt_in) = reversal_batch(16, 3);
    let scored = self_attention_scores(&m, &src, &tgt_in);
    let best = scored.iter().map(|s| s.3).fold(f64::MIN, f64::max);
    let tied: Vec<_> = scored
        .iter()
        .filter(|s| (s.3 - best).abs() < 1e-9)
        .collect();
    assert!(tied.len() >= 2, "test bug: no tie at the top ({scored:?})");
    let first = tied[0];
    let found = find_previous_token_head(&m, &src, &tgt_in);
    assert_eq!(
        (found.kind, found.layer, found.head),
        (first.0, first.1, first.2),
        "{} heads tie at the top score {best:.4} (every self-attention uniform): the \
         finder must name the first one met — {} attention, layer {}, head {} — and \
         named {} attention, layer {}, head {}. Replace the best only on a strictly \
         higher score (`max_by` and `>=` keep the last of equal ones)",
        tied.len(),
        first.0.name(),
        first.1,
        first.2,
        found.kind.name(),
        found.layer,
        found.head
    );
}

/// A tiny model trained for a few hundred steps, once for the tests that need
/// one: it gets some sequences right and some wrong, so switching a head off
/// can flip rows both ways.
fn trained_tiny() -> std::sync::MutexGuard<'static, (nn::VarStore, Transformer)>
{
    static TRAINED: OnceLock<Mutex<(nn::VarStore, Transformer)>> =
        OnceLock::new();
    let cell = TRAINED.get_or_init(|| {
        // Trainer::new seeds the global generator: hold its lock meanwhile.
        let _rng = global_rng();
        let opts = TrainOptions {
            epochs: 1,
            n_train: 300 * 64,
            n_val: 50,
            eval_samples: 50,
            warmup: 150,
            ..TrainOptions::default()
        };
        // The kernel matrix varies the seeds (COURSE_TEST_SEED); 0 by default.
        let offset = kernels::seed_offset();
        let opts = TrainOptions {
            seed: opts.seed + offset,
            ..opts
        };
        let mut t = Trainer::new(tiny_config(2), Device::Cpu, &opts).unwrap();
        let train = make_dataset(opts.n_train, offset);
        let val = make_dataset(opts.n_val, offset + 1);
        fit(&mut t, &train, &val, &opts, &mut ()).unwrap();
        let Trainer { vs, model, .. } = t;
        Mutex::new((vs, model))
    });
    cell.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn ex11_find_a_head_check_counts_the_flips_of_switching_it_off() {
    let guard = trained_tiny();
    let m = &guard.1;
    let (src, tgt, _) = reversal_batch(300, 21);
    let heads: Vec<FoundHead> =
        [AttentionKind::EncoderSelf, AttentionKind::DecoderSelf]
            .into_iter()
            .flat_map(|kind| {
                (0..2).flat_map(move |layer| {
                    (0..4).map(move |head| FoundHead {
                        kind,
                        layer,
                        head,
                        score: 0.0,
                    })
                })
            })
            .collect();
    // The recount, rows decoded 50 at a time: with every head on first, before
    // the check can change anything.
    let on = correct_rows(m, &src, &tgt, 50);
    // Rows must go both ways for a flip to mean anything: 1 to 299 right.
    kernels::report(
        "rows right of 300, every head on",
        on.iter().filter(|&&r| r).count() as f64,
        Bound::Between(1.0, 299.0),
    );
    let got: Vec<HeadCheck> =
        heads.iter().map(|f| check_head(m, f, &src, &tgt)).collect();
    assert!(
        on.iter().any(|&r| r) && !on.iter().all(|&r| r),
        "test bug: the trained tiny model must get some rows right and some wrong"
    );
    let mut lopsided = 0;
    for (f, g) in heads.iter().zip(&got) {
        let mha = attention_module(m, f.kind, f.layer);
        let off =
            with_head_off(mha, f.head, || correct_rows(m, &src, &tgt, 50));
        // Not by recounting the pairs as an answer would: two totals pin both
        // counts. The rows whose verdict the head changes are only_on + only_off;
        // the rows right with it on, less those right with it off, only_on − only_off.
        let right = |rows: &[bool]| rows.iter().filter(|&&r| r).count() as i64;
        let changed = on.iter().zip(&off).filter(|(a, b)| a != b).count();
        let gained = right(&on) - right(&off);
        let what = format!(
            "{} attention, layer {}, head {}",
            f.kind.name(),
            f.layer,
            f.head
        );
        let (g_on, g_off) = (g.only_on as i64, g.only_off as i64);
        assert!(
            g_on - g_off != -gained || gained == 0,
            "{what}: only_on and only_off swapped: only_on counts the rows right with the \
             head on and wrong with it off"
        );
        assert_eq!(
            (g.only_on + g.only_off, g_on - g_off),
            (changed, gained),
            "{what}: only_on + only_off must be the rows whose verdict switching the head \
             off changes ({changed}), and only_on − only_off the rows right with it on less \
             those right with it off ({gained}); recounted with correct_rows and \
             with_head_off on that head (of that kind and layer)"
        );
        lopsided += (gained != 0) as usize;
        assert_close_f64(
            g.p,
            sign_test_p_value(g.only_on, g.only_off),
            1e-12,
            &format!("{what}: the rows are pairs (the same rows, scored twice): the sign test's p"),
        );
    }
    kernels::report(
        &format!("heads of {} that flip rows unevenly", heads.len()),
        lopsided as f64,
        Bound::AtLeast(1.0),
    );
    assert!(lopsided > 0, "test bug: no head flips rows unevenly");
    // Every head is back on afterwards.
    assert_eq!(
        correct_rows(m, &src, &tgt, 50),
        on,
        "the model must be as it was after the check (with_head_off puts the head back)"
    );
}
