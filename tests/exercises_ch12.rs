//! Chapter 12 exercises: `cargo test --test exercises_ch12`.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::embedding::Init;
use transformer_course::exercises::ch12_sdpa_bench::{attention_in_query_chunks, max_len_for_budget, online_softmax_attention};
use transformer_course::sdpa::score_matrix_bytes;
use transformer_course::transformer::{make_causal_mask, make_padding_mask};

fn bytes_of(t: &Tensor) -> u64 {
    t.numel() as u64 * t.kind().elt_size_in_bytes() as u64
}

#[rstest]
#[case::one_score_matrix_f32(1, 2, 3, Kind::Float)]
#[case::scores_and_weights_bf16(2, 8, 8, Kind::BFloat16)]
#[case::three_copies_f64(3, 1, 1, Kind::Double)]
fn ex12_max_len_is_the_largest_that_fits(#[case] copies: u64, #[case] b: i64, #[case] h: i64, #[case] kind: Kind) {
    let cost = |l: i64| copies * score_matrix_bytes(b, h, l, kind);
    for budget in [0u64, 1, 1000, 123_456_789, 16 << 30, 80 << 30, cost(100), cost(100) - 1, cost(4096), cost(4096) + 1] {
        let l = max_len_for_budget(budget, b, h, kind, copies);
        assert!(l >= 0);
        assert!(l == 0 || cost(l) <= budget, "L = {l} needs {} bytes, budget {budget}", cost(l));
        assert!(cost(l + 1) > budget, "L = {} would still fit in {budget}", l + 1);
    }
}

#[test]
fn ex12_max_len_is_exact_where_floats_are_not() {
    // Budgets near 2⁶⁴ bytes of one-byte elements: an f64 holds them only to ±1024, and a
    // plain floating-point square root comes out one too high or one too low.
    let k: u64 = (1 << 32) - 1;
    assert_eq!(max_len_for_budget(k * k, 1, 1, Kind::Uint8, 1), k as i64);
    assert_eq!(max_len_for_budget(k * k - 1, 1, 1, Kind::Uint8, 1), k as i64 - 1);
    assert_eq!(max_len_for_budget(u64::MAX, 1, 1, Kind::Uint8, 1), k as i64);
    let m: u64 = 1_991_887_577;
    assert_eq!(max_len_for_budget(3 * m * m, 1, 3, Kind::Uint8, 1), m as i64);
}

#[test]
fn ex12_max_len_against_real_tensors() {
    // Score tensors of the length it returns really fit, one longer really do not.
    let budget = 50_000u64;
    let l = max_len_for_budget(budget, 2, 3, Kind::Float, 2);
    let scores = |l: i64| {
        let q = Tensor::randn([2, 3, l, 4], (Kind::Float, Device::Cpu));
        q.matmul(&q.transpose(-2, -1))
    };
    assert!(2 * bytes_of(&scores(l)) <= budget);
    assert!(2 * bytes_of(&scores(l + 1)) > budget);
    // The source chapter's B = 8, h = 8 in bf16: L = 1024 costs 256 MiB for two copies.
    assert_eq!(max_len_for_budget(256 << 20, 8, 8, Kind::BFloat16, 2), 1024);
}

fn mha(seed: i64) -> (nn::VarStore, MultiHeadAttention) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = MultiHeadAttention::new(vs.root(), 32, 4, 0.0, Init::Paper).unwrap();
    (vs, m)
}

#[rstest]
fn ex12_query_chunks_equal_the_whole(#[values(1, 3, 7, 10, 15)] chunk: i64, #[values("none", "causal", "padding")] mask: &str) {
    let (_vs, m) = mha(chunk);
    let x = Tensor::randn([2, 10, 32], (Kind::Float, Device::Cpu));
    let ids = Tensor::from_slice(&[3i64, 4, 5, 6, 7, 8, 2, 0, 0, 0, 3, 4, 2, 0, 0, 0, 0, 0, 0, 0]).view([2, 10]);
    let mask = match mask {
        "causal" => Some(make_causal_mask(10, Device::Cpu)),
        "padding" => Some(make_padding_mask(&ids)),
        _ => None,
    };
    let (expected, _) = m.forward(&x, &x, &x, mask.as_ref(), false);
    let got = attention_in_query_chunks(&m, &x, mask.as_ref(), chunk);
    assert_eq!(got.size(), expected.size());
    let d = (got - expected).abs().max().double_value(&[]);
    assert!(d < 1e-5, "chunk {chunk}: differs from the whole layer by {d:e}");
}

/// softmax(q·kᵀ/√d)·v, the plain way (libtorch's softmax subtracts the max itself).
fn reference(q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
    let d = *q.size().last().unwrap() as f64;
    (q.matmul(&k.transpose(-2, -1)) / d.sqrt()).softmax(-1, q.kind()).matmul(v)
}

#[rstest]
fn ex12_online_softmax_equals_softmax(#[values(1, 4, 5, 16, 40)] block: i64) {
    tch::manual_seed(block);
    let q = Tensor::randn([2, 3, 6, 8], (Kind::Double, Device::Cpu));
    let k = Tensor::randn([2, 3, 16, 8], (Kind::Double, Device::Cpu));
    let v = Tensor::randn([2, 3, 16, 5], (Kind::Double, Device::Cpu));
    let got = online_softmax_attention(&q, &k, &v, block);
    assert_eq!(got.size(), vec![2, 3, 6, 5]);
    let d = (got - reference(&q, &k, &v)).abs().max().double_value(&[]);
    assert!(d < 1e-10, "block {block}: {d:e}");
}

#[rstest]
fn ex12_online_softmax_survives_huge_scores(#[values(3, 8)] block: i64) {
    // Scores in the thousands: exp overflows to inf in fp32 unless the running max is subtracted.
    tch::manual_seed(1);
    let q = Tensor::randn([4, 8], (Kind::Float, Device::Cpu)) * 60.0;
    let k = Tensor::randn([11, 8], (Kind::Float, Device::Cpu)) * 60.0;
    let v = Tensor::randn([11, 3], (Kind::Float, Device::Cpu));
    let got = online_softmax_attention(&q, &k, &v, block);
    assert_eq!(got.isfinite().all().int64_value(&[]), 1, "inf or NaN: the running maximum is missing");
    let d = (got - reference(&q, &k, &v)).abs().max().double_value(&[]);
    assert!(d < 1e-4, "{d:e}");
}
