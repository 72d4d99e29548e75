//! Exercises of "What each piece buys" — reading the study against your own
//! prediction, and a variant of your own through its seam. Check with `cargo
//! test --test exercises_ch13`.
use transformer_course::generate::sign_test_p_value;
use workbench::ablation::{Norm, Switches, Variant};

/// ★ ex13_surprise — Where did the study surprise you? `predicted` is your
/// ranking of the variants, best exact match first, written down before you
/// looked; `measured` is each variant's measured rate (in any order). A
/// variant's measured rank is the number of variants with a strictly higher
/// rate (ties share a rank); its predicted rank is its index in `predicted`.
/// Returns the variant whose measured rank is furthest from its predicted one,
/// with measured − predicted (positive: it did worse than you thought). Among
/// equal distances, the one that comes first in `measured`. An error names the
/// problem when `predicted` is not an ordering of exactly the measured
/// variants (one missing, one twice, one unknown).
pub fn largest_surprise(
    predicted: &[&str],
    measured: &[(&str, f64)],
) -> Result<(String, i64), String> {
    // ANCHOR: ex13_surprise
    // HINT: check `predicted` first: each measured name exactly once, nothing
    // HINT: else. Then, for each measured (name, rate) in order, count the
    // HINT: variants with a strictly higher rate: that is its measured rank.
    // HINT: Keep the first one with the largest |measured − predicted|.
    for name in predicted {
        if !measured.iter().any(|m| m.0 == *name) {
            return Err(format!("'{name}' was not measured"));
        }
        if predicted.iter().filter(|p| *p == name).count() > 1 {
            return Err(format!("'{name}' is predicted twice"));
        }
    }
    if let Some(m) = measured.iter().find(|m| !predicted.contains(&m.0)) {
        return Err(format!("'{}' has no predicted rank", m.0));
    }
    let mut best: Option<(String, i64)> = None;
    for &(name, rate) in measured {
        let rank = measured.iter().filter(|m| m.1 > rate).count() as i64;
        let guess = predicted.iter().position(|p| *p == name).unwrap() as i64;
        let shift = rank - guess;
        if best.as_ref().is_none_or(|b| shift.abs() > b.1.abs()) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())
    // ANCHOR_END: ex13_surprise
}

/// ★★ ex13_post_norm_warmup — Xiong et al. (2020) traced warmup's necessity to
/// Post-Norm: with the LayerNorm after the residual, the gradients near the
/// output are large at the start, so a full rate from step 1 can derail
/// training, while Pre-Norm needs warmup far less. Chapter 04's `norms`
/// experiment saw no harm on a two-layer encoder-only tagger. Put it to the
/// test on the whole model, through the study's seam, in two pieces
/// (`exercise_experiments post-norm` runs them).
///
/// First, the variant: the course with the 2017 paper's Post-Norm *and* no
/// warmup, built from `Switches::COURSE`. Name it "post-norm-no-warmup".
pub fn post_norm_without_warmup() -> Variant {
    // ANCHOR: ex13_post_norm_warmup_variant
    // HINT: a `Variant` is a name, a few words of what changes, the chapter of
    // HINT: the piece, the switches, and optional heads and dropout. Start the
    // HINT: switches from `Switches::COURSE` and change exactly two fields.
    Variant {
        name: "post-norm-no-warmup",
        change: "LN(x + f(x)), peak rate from step 1",
        chapter: "04",
        switches: Switches {
            norm: Norm::Post,
            warmup: false,
            ..Switches::COURSE
        },
        num_heads: None,
        dropout: None,
    }
    // ANCHOR_END: ex13_post_norm_warmup_variant
}

/// What two runs of the same seed say about each other, row by row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Rows the first run got right and the second wrong.
    pub lost: usize,
    /// Rows the second run got right and the first wrong.
    pub gained: usize,
    /// Two-sided p of the exact sign test on those flips.
    pub p: f64,
}

/// Second, the comparison the study's last column makes: `a` and `b` say, for
/// the same test rows in the same order, whether each run got the row right.
/// The two runs share their seed, their data and their batches, so compare them
/// row by row, not as two independent rates. Panics if the lengths differ.
pub fn paired_verdict(a: &[bool], b: &[bool]) -> Verdict {
    // ANCHOR: ex13_post_norm_warmup_verdict
    // HINT: rows both runs got right, or both wrong, say nothing about which is
    // HINT: better. Count the rows that flip each way; if the change made no
    // HINT: difference, each flip would go either way with chance ½
    // HINT: (`sign_test_p_value`).
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let pairs = a.iter().zip(b);
    let lost = pairs.clone().filter(|(x, y)| **x && !**y).count();
    let gained = pairs.filter(|(x, y)| !**x && **y).count();
    Verdict {
        lost,
        gained,
        p: sign_test_p_value(lost, gained),
    }
    // ANCHOR_END: ex13_post_norm_warmup_verdict
}
