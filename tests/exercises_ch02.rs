//! Chapter 02 exercises: `cargo test --test exercises_ch02`.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::embedding::Init;
use transformer_course::exercises::ch02_attention::{attention_without_head, scaled_dot_product};
use transformer_course::transformer::{make_causal_mask, make_padding_mask};

fn close(a: &Tensor, b: &Tensor, tol: f64) -> bool {
    a.size() == b.size() && (a - b).abs().max().double_value(&[]) < tol
}

/// A layer whose biases are not zero (the paper init zeroes them), so that a forgotten
/// or doubled bias shows.
fn mha(seed: i64, d: i64, h: i64) -> (nn::VarStore, MultiHeadAttention) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = MultiHeadAttention::new(vs.root(), d, h, 0.0, Init::Paper).unwrap();
    tch::no_grad(|| {
        for lin in [&m.W_q, &m.W_k, &m.W_v, &m.W_o] {
            let b = lin.bs.as_ref().unwrap();
            b.shallow_clone().copy_(&(Tensor::randn_like(b) * 0.3));
        }
    });
    (vs, m)
}

#[rstest]
#[case::no_mask(None)]
#[case::causal(Some(make_causal_mask(5, Device::Cpu)))]
fn ex02_by_hand_matches_libtorch(#[case] mask: Option<Tensor>) {
    tch::manual_seed(0);
    let (q, k, v) = (
        Tensor::randn([2, 3, 5, 8], (Kind::Float, Device::Cpu)),
        Tensor::randn([2, 3, 5, 8], (Kind::Float, Device::Cpu)),
        Tensor::randn([2, 3, 5, 6], (Kind::Float, Device::Cpu)),
    );
    let (out, w) = scaled_dot_product(&q, &k, &v, mask.as_ref());
    let allowed = mask.as_ref().map(|m| m.logical_not());
    let expected = Tensor::scaled_dot_product_attention(&q, &k, &v, allowed.as_ref(), 0.0, false, None, false);
    assert!(close(&out, &expected, 1e-5), "output differs from Tensor::scaled_dot_product_attention");
    assert_eq!(w.size(), vec![2, 3, 5, 5]);
    let row_sums = w.sum_dim_intlist(-1, false, Kind::Float);
    assert!(close(&row_sums, &Tensor::ones([2, 3, 5], (Kind::Float, Device::Cpu)), 1e-5), "rows must sum to 1");
    if let Some(m) = &mask {
        let leaked = w.masked_select(&m.expand([2, 3, 5, 5], false)).abs().sum(Kind::Float).double_value(&[]);
        assert_eq!(leaked, 0.0, "masked keys must get weight 0");
    }
}

#[test]
fn ex02_by_hand_fully_masked_row_is_uniform_not_nan() {
    let q = Tensor::randn([1, 3, 4], (Kind::Float, Device::Cpu));
    // Three queries, three keys, all keys masked.
    let mask = Tensor::from_slice(&[true, true, true]).view([1, 1, 3]);
    let (out, w) = scaled_dot_product(&q, &q, &q, Some(&mask));
    assert_eq!(out.isnan().any().int64_value(&[]), 0, "NaN in the output");
    assert!(close(&w, &Tensor::full([1, 3, 3], 1.0 / 3.0, (Kind::Float, Device::Cpu)), 1e-6), "expected uniform rows");
}

#[test]
fn ex02_by_hand_is_what_the_layer_does_per_head() {
    let (_vs, m) = mha(2, 16, 4);
    let x = Tensor::randn([2, 6, 16], (Kind::Float, Device::Cpu));
    let mask = make_causal_mask(6, Device::Cpu);
    let (expected, expected_w) = m.forward(&x, &x, &x, Some(&mask), false);
    let (q, k, v) = (m.split(&x.apply(&m.W_q)), m.split(&x.apply(&m.W_k)), m.split(&x.apply(&m.W_v)));
    let (out, w) = scaled_dot_product(&q, &k, &v, Some(&mask));
    assert!(close(&m.merge(&out).apply(&m.W_o), &expected, 1e-5));
    assert!(close(&w, &expected_w, 1e-6));
}

/// A copy of `m` whose W_o ignores head `head`: its block of input columns set to zero.
fn without_head_by_weights(m: &MultiHeadAttention, head: i64) -> (nn::VarStore, MultiHeadAttention) {
    let vs = nn::VarStore::new(Device::Cpu);
    let c = MultiHeadAttention::new(vs.root(), m.h * m.d_k, m.h, 0.0, Init::Paper).unwrap();
    tch::no_grad(|| {
        for (dst, src) in [(&c.W_q, &m.W_q), (&c.W_k, &m.W_k), (&c.W_v, &m.W_v), (&c.W_o, &m.W_o)] {
            dst.ws.shallow_clone().copy_(&src.ws);
            dst.bs.as_ref().unwrap().shallow_clone().copy_(src.bs.as_ref().unwrap());
        }
        let _ = c.W_o.ws.narrow(1, head * m.d_k, m.d_k).fill_(0.0);
    });
    (vs, c)
}

#[rstest]
#[case::self_causal(7, 7, true)]
#[case::cross(4, 9, false)]
fn ex02_head_ablation_removes_exactly_one_head(#[case] lq: i64, #[case] lk: i64, #[case] causal: bool, #[values(0, 2, 3)] head: i64) {
    let (_vs, m) = mha(head, 32, 4);
    let q = Tensor::randn([2, lq, 32], (Kind::Float, Device::Cpu));
    let kv = if causal { q.shallow_clone() } else { Tensor::randn([2, lk, 32], (Kind::Float, Device::Cpu)) };
    let mask = causal.then(|| make_causal_mask(lq, Device::Cpu));
    let got = attention_without_head(&m, &q, &kv, &kv, mask.as_ref(), head);
    let (_vs2, reference) = without_head_by_weights(&m, head);
    let (expected, _) = reference.forward(&q, &kv, &kv, mask.as_ref(), false);
    assert!(close(&got, &expected, 1e-5), "head {head} was not (only) removed");
}

#[test]
fn ex02_head_contributions_add_up() {
    // full − without_head(j) is head j's contribution; all of them together are full − bias.
    let (_vs, m) = mha(5, 32, 4);
    let x = Tensor::randn([2, 6, 32], (Kind::Float, Device::Cpu));
    let ids = Tensor::from_slice(&[3i64, 4, 5, 2, 0, 0, 3, 4, 5, 6, 7, 2]).view([2, 6]);
    let mask = make_padding_mask(&ids);
    let (full, _) = m.forward(&x, &x, &x, Some(&mask), false);
    let mut sum = Tensor::zeros_like(&full);
    for j in 0..4 {
        let contribution = &full - attention_without_head(&m, &x, &x, &x, Some(&mask), j);
        assert!(contribution.abs().max().double_value(&[]) > 1e-3, "head {j} contributes nothing?");
        sum += contribution;
    }
    let bias = m.W_o.bs.as_ref().unwrap();
    assert!(close(&sum, &(&full - bias), 1e-5), "the contributions of the heads must add up to the output minus W_o's bias");
}
