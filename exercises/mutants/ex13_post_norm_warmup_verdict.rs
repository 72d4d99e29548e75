// Wrong solutions of ex13_post_norm_warmup_verdict.

// MUTANT: unpaired — two independent rates (Fisher's test on the totals), not the rows that flip
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let right = |r: &[bool]| r.iter().filter(|&&x| x).count();
    let (ra, rb) = (right(a), right(b));
    Verdict {
        lost: ra.saturating_sub(rb),
        gained: rb.saturating_sub(ra),
        p: transformer_course::generate::two_rates_p_value(
            (a.len() - ra, a.len()),
            (b.len() - rb, b.len()),
        ),
    }

// MUTANT: swapped — lost and gained the other way round
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let pairs = a.iter().zip(b);
    let lost = pairs.clone().filter(|(x, y)| !**x && **y).count();
    let gained = pairs.filter(|(x, y)| **x && !**y).count();
    Verdict {
        lost,
        gained,
        p: sign_test_p_value(lost, gained),
    }

// MUTANT: all_rows — counts every row, agreements included, as a flip
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let lost = a.iter().zip(b).filter(|(x, y)| **x >= **y).count();
    let gained = a.len() - lost;
    Verdict {
        lost,
        gained,
        p: sign_test_p_value(lost, gained),
    }

// MUTANT: unchecked_lengths — zip stops at the shorter run: rows go unscored silently
    let pairs = a.iter().zip(b);
    let lost = pairs.clone().filter(|(x, y)| **x && !**y).count();
    let gained = pairs.filter(|(x, y)| !**x && **y).count();
    Verdict {
        lost,
        gained,
        p: sign_test_p_value(lost, gained),
    }

// MUTANT: via_closure — Fisher's test of two independent rates, called inside a closure
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let misses = |r: &[bool]| r.iter().filter(|x| !**x).count();
    let fisher = |x: &[bool], y: &[bool]| {
        transformer_course::generate::two_rates_p_value((misses(x), x.len()), (misses(y), y.len()))
    };
    let pairs = a.iter().zip(b);
    Verdict {
        lost: pairs.clone().filter(|(x, y)| **x && !**y).count(),
        gained: pairs.filter(|(x, y)| !**x && **y).count(),
        p: fisher(a, b),
    }

// MUTANT: via_module_path — Fisher's test through a helper module's path
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let pairs = a.iter().zip(b);
    Verdict {
        lost: pairs.clone().filter(|(x, y)| **x && !**y).count(),
        gained: pairs.filter(|(x, y)| !**x && **y).count(),
        p: fisher_helpers::p(a, b),
    }
// APPEND:
mod fisher_helpers {
    pub use transformer_course::generate as g;
    pub fn p(a: &[bool], b: &[bool]) -> f64 {
        let m = |r: &[bool]| r.iter().filter(|x| !**x).count();
        g::two_rates_p_value((m(a), a.len()), (m(b), b.len()))
    }
}

// MUTANT: via_reexport — Fisher's test re-exported under another name by another exercise file
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let m = |r: &[bool]| r.iter().filter(|x| !**x).count();
    let pairs = a.iter().zip(b);
    Verdict {
        lost: pairs.clone().filter(|(x, y)| **x && !**y).count(),
        gained: pairs.filter(|(x, y)| !**x && **y).count(),
        p: crate::ch08_reverse_data::rates_p((m(a), a.len()), (m(b), b.len())),
    }
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::generate::two_rates_p_value as rates_p;

// MUTANT: net_change — the change in the totals read as the flips: right where one run's right rows hold the other's
    assert_eq!(a.len(), b.len(), "the runs must be scored on the same rows");
    let right = |r: &[bool]| r.iter().filter(|&&x| x).count();
    let (ra, rb) = (right(a), right(b));
    let (lost, gained) = (ra.saturating_sub(rb), rb.saturating_sub(ra));
    Verdict {
        lost,
        gained,
        p: sign_test_p_value(lost, gained),
    }
