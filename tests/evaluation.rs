//! Chapters 10 and 11: the held-out test set, the Wilson interval, and switching
//! one attention head off.
use tch::{Device, Kind, Tensor};
use transformer_course::attention::scaled_dot_product;
use transformer_course::data::{digit_rows, digit_sequences, make_dataset};
use transformer_course::generate::{
    holm_passes, mean_interval_95, same_rate_p_value, sign_flip_p_value,
    sign_test_p_value, two_rates_p_value, wilson_interval,
};
use transformer_course::train::{reverse_data, test_data, TrainOptions};
use transformer_course::viz::{
    attention_module, content_matching, head_ablation, with_head_off,
    AttentionKind,
};

mod common;

#[test]
fn wilson_interval_matches_the_textbook_values() {
    let close = |(a, b): (f64, f64), (c, d): (f64, f64)| {
        assert!((a - c).abs() < 5e-4 && (b - d).abs() < 5e-4, "{a} {b}");
    };
    // Agresti & Coull (1998) and any statistics table.
    close(wilson_interval(0, 10), (0.0, 0.2775));
    close(wilson_interval(5, 10), (0.2366, 0.7634));
    close(wilson_interval(100, 100), (0.9630, 1.0));
    close(wilson_interval(98, 100), (0.9300, 0.9945));
    // k right of n mirrors n - k right.
    let (lo, hi) = wilson_interval(3, 40);
    let (lo2, hi2) = wilson_interval(37, 40);
    close((lo, hi), (1.0 - hi2, 1.0 - lo2));
    assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
}

#[test]
fn the_permutation_test_gives_the_exact_chance_of_a_small_case() {
    // Two misses among four rows, two rows per group: of the six ways to
    // place them, two put both in one group, as unevenly as (2, 0) does.
    let p = same_rate_p_value(&[(2, 2), (0, 2)], 20_000, 0);
    assert!((p - 1.0 / 3.0).abs() < 0.02, "p = {p}, exact 1/3");
    // Misses spread as evenly as they can be: nothing is less uneven.
    let even = [(1, 100); 10];
    assert_eq!(same_rate_p_value(&even, 1_000, 0), 1.0);
    assert_eq!(same_rate_p_value(&[(0, 10), (0, 20)], 1_000, 0), 1.0);
}

#[test]
fn fishers_exact_test_matches_hand_checked_cases() {
    let close =
        |p: f64, want: f64| assert!((p - want).abs() < 1e-6, "{p} vs {want}");
    // Two misses among four rows, two rows per group: the splits (2, 0), (1, 1)
    // and (0, 2) have chances 1/6, 4/6 and 1/6, so (2, 0) and (0, 2) make p = 1/3,
    // the number the permutation test above approaches by drawing.
    close(two_rates_p_value((2, 2), (0, 2)), 1.0 / 3.0);
    // Fisher's own kind of table, worked in most textbooks (and Wikipedia's
    // article): 1 of 10 against 11 of 14, p = 0.002759.
    close(two_rates_p_value((1, 10), (11, 14)), 0.002_759_456);
    // Chapter 10's first example (its Intel model): 5 misses in 568 nine-digit
    // rows against none in 606 ten-digit rows; scipy.stats.fisher_exact([[5, 563],
    // [0, 606]]) gives 0.0262687. Their 95 % intervals overlap all the same.
    close(two_rates_p_value((5, 568), (0, 606)), 0.026_268_719);
    // Its example now: 1 miss in 533 five-digit rows against 9 in 606 ten-digit
    // rows, overlapping intervals again; the exact sum, in fractions, is 0.0234702.
    close(two_rates_p_value((1, 533), (9, 606)), 0.023_470_164);
    // The groups' order does not matter; equal rates are no evidence at all.
    close(two_rates_p_value((0, 606), (5, 568)), 0.026_268_719);
    close(two_rates_p_value((2, 1000), (10, 5000)), 1.0);
    close(two_rates_p_value((0, 10), (0, 20)), 1.0);
}

#[test]
fn the_sign_test_counts_lopsided_flips_exactly() {
    // 4 flips all one way: 2 · (1/2)^4, chapter 11's bound.
    assert!((sign_test_p_value(4, 0) - 0.125).abs() < 1e-12);
    assert!((sign_test_p_value(0, 4) - 0.125).abs() < 1e-12);
    // 5 against 1: 2 · (1 + 6) / 64.
    assert!((sign_test_p_value(5, 1) - 14.0 / 64.0).abs() < 1e-12);
    // No flips, or balanced ones: nothing to see.
    assert_eq!(sign_test_p_value(0, 0), 1.0);
    assert_eq!(sign_test_p_value(3, 3), 1.0);
    // 20 one way: 2^-19.
    assert!((sign_test_p_value(0, 20) / 2f64.powi(-19) - 1.0).abs() < 1e-9);
}

#[test]
fn the_test_across_seeds_counts_sign_flips_exactly() {
    // Three seeds all one way: 2 of the 8 flips are as far out (all +, all −).
    assert_eq!(sign_flip_p_value(&[0.23, 0.095, 0.232]), 0.25);
    // Eight the same way: 2/256, the fewest seeds that can pass 0.01.
    let eight = [0.1, 0.2, 0.05, 0.3, 0.15, 0.12, 0.08, 0.2];
    assert_eq!(sign_flip_p_value(&eight), 2.0 / 256.0);
    assert!(sign_flip_p_value(&eight[..7]) > 0.01);
    // One small difference against the rest: flipping it alone, or everything
    // but it, is as far out too, so 4 of 16.
    assert_eq!(sign_flip_p_value(&[0.3, 0.3, 0.3, -0.01]), 4.0 / 16.0);
    // Split seeds: nothing to see.
    assert_eq!(sign_flip_p_value(&[0.2, -0.2, 0.1, -0.1]), 1.0);
    // The seeds of chapter 13's text, 0 vs 1 with no switch thrown, seen as
    // differences: the sign of one difference decides nothing.
    assert_eq!(sign_flip_p_value(&[0.123]), 1.0);
}

#[test]
fn the_interval_across_seeds_is_students_t() {
    // Mean 2, sd √(2/3) over 4 differences: 2 ± 3.182 · √(2/3)/2.
    let (m, lo, hi) = mean_interval_95(&[1.0, 2.0, 3.0, 2.0]);
    let sd = (2.0f64 / 3.0).sqrt();
    assert!((m - 2.0).abs() < 1e-12);
    assert!((hi - (2.0 + 3.182 * sd / 2.0)).abs() < 1e-9, "{hi}");
    assert!((lo - (2.0 - 3.182 * sd / 2.0)).abs() < 1e-9, "{lo}");
    // Ten equal differences: no spread, the interval is the point.
    assert_eq!(mean_interval_95(&[0.25; 10]), (0.25, 0.25, 0.25));
}

#[test]
fn holm_asks_more_of_the_smallest_p() {
    // Three tests at 0.01: 0.002 < 0.01/3, 0.004 < 0.01/2, 0.009 < 0.01.
    assert_eq!(holm_passes(&[0.009, 0.002, 0.004], 0.01), [true; 3]);
    // 0.0078 (eight seeds, all one way) is not below 0.01/3: nothing passes,
    // though each would alone.
    assert_eq!(holm_passes(&[0.0078; 3], 0.01), [false; 3]);
    // The first failure stops the rest, even a smaller-than-alpha one after it.
    assert_eq!(
        holm_passes(&[0.001, 0.006, 0.009], 0.01),
        [true, false, false]
    );
}

#[test]
fn the_permutation_test_finds_misses_crowded_into_one_group() {
    // Ten misses, all in one of ten groups of 500: by chance about once in
    // 10⁹ scatterings, so no draw of 2,000 is as uneven.
    let mut groups = [(0, 500); 10];
    groups[7].0 = 10;
    let p = same_rate_p_value(&groups, 2_000, 3);
    assert_eq!(p, 1.0 / 2_001.0, "the real scattering is the only one");
    // Spread over two neighbouring groups, still rare; over five, not.
    let mut two = [(0, 500); 10];
    (two[7].0, two[8].0) = (5, 5);
    assert!(same_rate_p_value(&two, 2_000, 3) < 0.01);
    let mut five = [(0, 500); 10];
    (0..5).for_each(|i| five[2 * i].0 = 2);
    assert!(same_rate_p_value(&five, 2_000, 3) > 0.05);
    // The same seed, the same answer.
    assert_eq!(
        same_rate_p_value(&two, 500, 9),
        same_rate_p_value(&two, 500, 9)
    );
}

#[test]
fn more_samples_give_a_narrower_interval() {
    let width = |k, n| {
        let (lo, hi) = wilson_interval(k, n);
        hi - lo
    };
    assert!(width(990, 1000) < width(99, 100));
    assert!(width(99, 100) < width(10, 10) + 0.2);
}

#[test]
fn the_test_set_shares_no_sequence_with_training_or_validation() {
    let opts = TrainOptions {
        n_train: 3000,
        n_val: 300,
        ..TrainOptions::default()
    };
    let (train, val) = reverse_data(&opts);
    let test = test_data(&opts, &train, &val, 400);
    assert_eq!(test.len(), 400);
    let (seen, checked) = (digit_sequences(&train), digit_sequences(&val));
    for s in digit_rows(&test) {
        assert!(!seen.contains(&s), "{s:?} is in the training set");
        assert!(!checked.contains(&s), "{s:?} is in the validation set");
    }
    // Its own seed: not the validation stream with some rows skipped.
    let val_stream = digit_rows(&make_dataset(400, opts.data_seed + 1));
    let test_rows = digit_rows(&test);
    let shared = test_rows.iter().filter(|s| val_stream.contains(s)).count();
    assert!(
        shared < 10,
        "{shared} rows shared with the validation stream"
    );
    // The same recipe gives the same set.
    let again = test_data(&opts, &train, &val, 400);
    assert!(again.src.equal(&test.src));
}

/// Head `head` of `mha` zeroed by hand between the attention core and W_o.
fn without_head_by_hand(
    mha: &transformer_course::attention::MultiHeadAttention,
    x: &Tensor,
    head: i64,
) -> Tensor {
    let (q, k) = (mha.project(x, &mha.W_q), mha.project(x, &mha.W_k));
    let v = mha.project(x, &mha.W_v);
    let (heads, _) = scaled_dot_product(&q, &k, &v, None, 0.0, false);
    let keep = Tensor::arange(mha.h, (Kind::Int64, Device::Cpu))
        .ne(head)
        .to_kind(Kind::Float)
        .view([1, mha.h, 1, 1]);
    mha.merge(&(heads * keep)).apply(&mha.W_o)
}

#[test]
fn a_head_switched_off_is_exactly_its_output_zeroed_and_comes_back() {
    let (_vs, model) = common::tiny_model(3);
    let _rng = common::global_rng();
    tch::manual_seed(5);
    let x = Tensor::randn([2, 6, 32], (Kind::Float, Device::Cpu));
    let mha = attention_module(&model, AttentionKind::EncoderSelf, 1);
    let before = mha.W_o.ws.copy();
    let full = tch::no_grad(|| mha.forward(&x, &x, &x, None, false).0);
    for head in 0..mha.h {
        let off = with_head_off(mha, head, || {
            tch::no_grad(|| mha.forward(&x, &x, &x, None, false).0)
        });
        let want = tch::no_grad(|| without_head_by_hand(mha, &x, head));
        let diff = (&off - &want).abs().max().double_value(&[]);
        assert!(diff < 1e-6, "head {head}: {diff}");
        let moved = (&off - &full).abs().max().double_value(&[]);
        assert!(moved > 1e-4, "switching head {head} off changed nothing");
    }
    assert!(mha.W_o.ws.equal(&before), "W_o was not restored");
    // Restored even when the evaluation panics.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        with_head_off(mha, 0, || panic!("evaluation failed"))
    }));
    assert!(r.is_err());
    assert!(mha.W_o.ws.equal(&before), "W_o not restored after a panic");
}

#[test]
fn ablation_and_content_tables_cover_every_kind_layer_and_head() {
    let (_vs, model) = common::tiny_model(4);
    let data = make_dataset(8, 0);
    let before: Vec<Tensor> = AttentionKind::ALL
        .iter()
        .flat_map(|&k| (0..2).map(move |l| (k, l)))
        .map(|(k, l)| attention_module(&model, k, l).W_o.ws.copy())
        .collect();
    let table = head_ablation(&model, &data);
    let content = content_matching(&model, &data);
    for t in [table.len(), content.len()] {
        assert_eq!(t, 3);
    }
    for kind in 0..3 {
        assert_eq!(table[kind].len(), 2);
        assert!(table[kind].iter().all(|l| l.len() == 4));
        for layer in &content[kind] {
            for &(w, share) in layer {
                assert!((0.0..=1.0 + 1e-6).contains(&w), "weight {w}");
                assert!(share > 0.0 && share <= 1.0, "share {share}");
            }
        }
    }
    let after = AttentionKind::ALL
        .iter()
        .flat_map(|&k| (0..2).map(move |l| (k, l)))
        .map(|(k, l)| attention_module(&model, k, l).W_o.ws.copy());
    for (a, b) in before.iter().zip(after) {
        assert!(a.equal(&b), "an ablation left a head switched off");
    }
}

#[test]
fn the_chance_share_counts_same_digit_keys_among_the_real_ones() {
    // In `1 1 2 <eos>` each 1 has one same-digit key among its three other
    // keys; in `3 4 5 <eos>` nothing repeats, so no query there counts.
    let (_vs, model) = common::tiny_model(6);
    let src_digits = [[1i64, 1, 2], [3, 4, 5]];
    let mut src = Vec::new();
    let mut tgt = Vec::new();
    for d in src_digits {
        let (s, t) = transformer_course::data::encode_pair(&d);
        src.extend_from_slice(&s);
        tgt.extend_from_slice(&t);
    }
    let data = transformer_course::data::ReverseDataset {
        src: Tensor::from_slice(&src).view([2, -1]),
        tgt: Tensor::from_slice(&tgt).view([2, -1]),
    };
    let content = content_matching(&model, &data);
    // Encoder self-attention: only row 0's two 1s have a same-digit key, one
    // other key each among 3 others (2 digits + EOS).
    let share = content[0][0][0].1;
    assert!((share - 1.0 / 3.0).abs() < 1e-6, "share {share}");
}
