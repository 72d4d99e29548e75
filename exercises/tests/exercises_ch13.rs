//! Exercises of "What each piece buys": `cargo test --test exercises_ch13`.
mod common;

use common::{config, global_rng};
use exercises::ch13_ablation::{
    largest_surprise, paired_verdict, post_norm_without_warmup, Verdict,
};
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::generate::sign_test_p_value;
use transformer_course::train::TrainOptions;
use workbench::ablation::{
    variant_named, Ablated, AblatedTrainer, Norm, Switches, VARIANTS,
};
use workbench::optim::AdamKind;

fn rates(pairs: &[(&'static str, f64)]) -> Vec<(&'static str, f64)> {
    pairs.to_vec()
}

#[test]
fn ex13_surprise_is_zero_when_the_prediction_was_right() {
    let m = rates(&[("a", 0.9), ("b", 0.5), ("c", 0.1)]);
    let got = largest_surprise(&["a", "b", "c"], &m).unwrap();
    assert_eq!(got, ("a".to_string(), 0), "a perfect prediction: shift 0");
}

#[test]
fn ex13_surprise_ranks_by_rate_not_by_the_order_given() {
    // Listed worst first: ranks come from the rates.
    let m = rates(&[("c", 0.1), ("b", 0.5), ("a", 0.9), ("d", 0.7)]);
    let got = largest_surprise(&["a", "b", "c", "d"], &m).unwrap();
    // Measured ranks: a 0, d 1, b 2, c 3; predicted: a 0, b 1, c 2, d 3.
    // d moved up 2, the most.
    assert_eq!(
        got,
        ("d".to_string(), -2),
        "measured rank is the number of variants with a higher rate, \
         whatever order `measured` lists them in"
    );
}

#[test]
fn ex13_surprise_positive_means_worse_than_predicted() {
    let m = rates(&[("a", 0.1), ("b", 0.8), ("c", 0.9)]);
    let got = largest_surprise(&["a", "b", "c"], &m).unwrap();
    // a: predicted 0, measured 2. c: predicted 2, measured 0. Equal distance:
    // the first in `measured`, a, which did worse.
    assert_eq!(got, ("a".to_string(), 2));
}

#[test]
fn ex13_surprise_ties_share_a_rank() {
    // b and c tie for second: both have measured rank 1.
    let m = rates(&[("a", 0.9), ("b", 0.5), ("c", 0.5), ("d", 0.0)]);
    let got = largest_surprise(&["d", "a", "b", "c"], &m).unwrap();
    // Ranks a 0, b 1, c 1, d 3; predicted d 0, a 1, b 2, c 3.
    // Shifts: a -1, b -1, c -2, d +3.
    assert_eq!(got, ("d".to_string(), 3));
    let got = largest_surprise(&["a", "d", "c", "b"], &m).unwrap();
    // Predicted a 0, d 1, c 2, b 3; shifts a 0, b -2, c -1, d +2: b first.
    assert_eq!(
        got,
        ("b".to_string(), -2),
        "two variants with one rate have one rank, the better one"
    );
    // The tie's second variant decides here. A rank read off the list sorted by rate
    // puts c behind b (rank 2), a shift of −1 that only ties with d's +1, and the tie
    // goes to c, first in `measured`: ("c", −1).
    let got = largest_surprise(&["a", "b", "d", "c"], &m).unwrap();
    // Ranks a 0, b 1, c 1, d 3; predicted a 0, b 1, d 2, c 3: shifts a 0, b 0, c −2, d +1.
    assert_eq!(
        got,
        ("c".to_string(), -2),
        "b and c tie at 0.5, so c's measured rank is 1, as b's is: the number of variants \
         with a strictly higher rate, not c's place in a list sorted by rate"
    );
}

#[rstest]
#[case::one_missing(&["a", "b"], "'c'")]
#[case::one_twice(&["a", "b", "b", "c"], "'b'")]
#[case::one_unknown(&["a", "b", "c", "x"], "'x'")]
fn ex13_surprise_refuses_a_prediction_that_is_not_an_ordering(
    #[case] predicted: &[&str],
    #[case] named: &str,
) {
    let m = rates(&[("a", 0.9), ("b", 0.5), ("c", 0.1)]);
    let err = largest_surprise(predicted, &m)
        .expect_err("a prediction that is not an ordering of the variants");
    assert!(err.contains(named), "the error should name {named}: {err}");
}

#[test]
fn ex13_surprise_works_on_the_study_s_own_variants() {
    // The chapter order as a prediction, rates falling along it but for one.
    let names: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
    let mut m: Vec<(&str, f64)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, 1.0 - i as f64 / 100.0))
        .collect();
    m[3].1 = 0.0; // no-scale falls to the bottom
    let got = largest_surprise(&names, &m).unwrap();
    // From fourth place to last: as many places as there are variants after it.
    let shift = (names.len() - 1 - 3) as i64;
    assert_eq!(got, (names[3].to_string(), shift));
}

#[test]
fn ex13_post_norm_warmup_variant_changes_exactly_the_two_switches() {
    let v = post_norm_without_warmup();
    assert_eq!(v.name, "post-norm-no-warmup");
    let want = Switches {
        norm: Norm::Post,
        warmup: false,
        ..Switches::COURSE
    };
    assert_eq!(v.switches, want, "Post-Norm and no warmup, nothing else");
    assert_eq!(
        (v.num_heads, v.dropout),
        (None, None),
        "the course's heads and dropout"
    );
    assert!(!v.change.is_empty(), "say in a few words what changes");
}

/// The course's shape, shrunk: d_model 32, 4 heads, d_ff 64, no dropout.
fn small() -> TransformerConfig {
    config(32, 4, 64)
}

#[test]
fn ex13_post_norm_warmup_variant_trains_at_the_peak_from_step_1() {
    let _g = global_rng();
    let v = post_norm_without_warmup();
    let opts = TrainOptions::default();
    let t = AblatedTrainer::new(&v, small(), Device::Cpu, &opts, AdamKind::Tch)
        .unwrap();
    let course = variant_named("course").unwrap();
    let c =
        AblatedTrainer::new(course, small(), Device::Cpu, &opts, AdamKind::Tch)
            .unwrap();
    assert_eq!(
        t.lr_at(1),
        c.lr_at(opts.warmup),
        "no warmup: the peak at step 1"
    );
    // Its encoder ends in a LayerNorm of the last layer, not in ln_final:
    // gains of 3 there give rows of spread 3.
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = Ablated::new(&vs, v.on(small()), v.switches).unwrap();
    let last = m.model.encoder.layers.last().unwrap();
    tch::no_grad(|| {
        let _ = last.ln2.ws.as_ref().unwrap().shallow_clone().fill_(3.0);
    });
    let src = Tensor::from_slice(&[10i64, 6, 3, 12, 2]).view([1, 5]);
    let memory = m.encode(&src, false).0;
    let spread = memory.std_dim(-1, false, false).mean(Kind::Float);
    let spread = spread.double_value(&[]);
    assert!(
        (spread - 3.0).abs() < 0.05,
        "Post-Norm rows have spread {spread}"
    );
}

#[test]
fn ex13_post_norm_warmup_verdict_counts_the_flips() {
    let a = [true, true, false, false, true, false];
    let b = [true, false, true, false, false, false];
    let v = paired_verdict(&a, &b);
    assert_eq!(
        (v.lost, v.gained),
        (2, 1),
        "(lost, gained): rows 1 and 4 were right in the first run only, row 2 in the \
         second only; the totals (3 against 2) differ by 1, but count the rows that \
         flip, not the change in the totals"
    );
    assert_eq!(v.p, sign_test_p_value(2, 1));
    let v = paired_verdict(&b, &a);
    assert_eq!(
        (v.lost, v.gained),
        (1, 2),
        "lost: right in the first run only"
    );
}

#[test]
fn ex13_post_norm_warmup_verdict_pairs_rows_instead_of_comparing_rates() {
    // 100 rows. The first run gets 60 right; the second loses 10 of them and
    // gains none. As two independent rates, 60 % against 50 % is far from
    // significant; paired, ten flips all one way are.
    let a: Vec<bool> = (0..100).map(|i| i < 60).collect();
    let b: Vec<bool> = (0..100).map(|i| i < 50).collect();
    let v = paired_verdict(&a, &b);
    let want = Verdict {
        lost: 10,
        gained: 0,
        p: sign_test_p_value(10, 0),
    };
    assert_eq!(
        v, want,
        "the runs share their rows: count the rows that flip each way and \
         test those flips (sign_test_p_value), not two independent rates"
    );
    assert!(v.p < 0.01);
}

/// Its own test, so that a verdict through Fisher's test is named a shortcut even
/// when its p is also wrong.
#[test]
fn ex13_post_norm_warmup_verdict_is_written_by_hand() {
    common::assert_not_called(
        "ex13_post_norm_warmup_verdict",
        &[(
            "two_rates_p_value",
            "Fisher's test treats the runs as independent samples; pair the rows",
        )],
        || paired_verdict(&[true, false, true, true], &[false, false, true, false]),
    );
}

#[test]
fn ex13_post_norm_warmup_verdict_refuses_runs_of_different_rows() {
    // Runs of one length first: a blank exercise stops here, at its todo!().
    let _ = paired_verdict(&[true], &[false]);
    let got =
        std::panic::catch_unwind(|| paired_verdict(&[true, false], &[true]));
    let message = match got {
        Ok(v) => panic!("runs of 2 and 1 rows were compared: {v:?}"),
        Err(e) => workbench::cli::panic_message(e.as_ref()),
    };
    assert!(
        message.contains("same rows"),
        "the panic should say the runs must be scored on the same rows: {message}"
    );
}
