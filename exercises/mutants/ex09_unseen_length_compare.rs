// Wrong solutions of ex09_unseen_length_compare.

// MUTANT: sign_test — a paired test on rows that are not pairs
    assert!(
        seen.iter().all(|s| s.len != held_out.len),
        "a seen score has the held-out length {}",
        held_out.len
    );
    let h = (held_out.right, held_out.scored.len());
    let s = seen
        .iter()
        .fold((0, 0), |(r, n), x| (r + x.right, n + x.scored.len()));
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: wilson_interval(h.0, h.1),
        seen_interval: wilson_interval(s.0, s.1),
        p: transformer_course::generate::sign_test_p_value(h.1 - h.0, s.1 - s.0),
    }

// MUTANT: overlap — the verdict read off the intervals: p = 1 where they overlap, 0 where not
    assert!(
        seen.iter().all(|s| s.len != held_out.len),
        "a seen score has the held-out length {}",
        held_out.len
    );
    let h = (held_out.right, held_out.scored.len());
    let s = seen
        .iter()
        .fold((0, 0), |(r, n), x| (r + x.right, n + x.scored.len()));
    let (hi, si) = (wilson_interval(h.0, h.1), wilson_interval(s.0, s.1));
    let overlap = hi.0 <= si.1 && si.0 <= hi.1;
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: hi,
        seen_interval: si,
        p: if overlap { 1.0 } else { 0.0 },
    }

// MUTANT: first_seen_only — compares against the first seen length instead of all of them pooled
    assert!(
        seen.iter().all(|s| s.len != held_out.len),
        "a seen score has the held-out length {}",
        held_out.len
    );
    let h = (held_out.right, held_out.scored.len());
    let s = (seen[0].right, seen[0].scored.len());
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: wilson_interval(h.0, h.1),
        seen_interval: wilson_interval(s.0, s.1),
        p: two_rates_p_value((h.1 - h.0, h.1), (s.1 - s.0, s.1)),
    }

// MUTANT: rights_as_misses — hits passed where the test wants misses, and the rows left out of the pool
    assert!(
        seen.iter().all(|s| s.len != held_out.len),
        "a seen score has the held-out length {}",
        held_out.len
    );
    let h = (held_out.right, held_out.scored.len());
    let s = seen
        .iter()
        .fold((0, 0), |(r, n), x| (r + x.right, n + x.scored.len()));
    let rows = h.1 + s.1;
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: wilson_interval(h.0, h.1),
        seen_interval: wilson_interval(s.0, s.1),
        p: two_rates_p_value((h.0, rows), (s.0, rows)),
    }

// MUTANT: mean_of_rates — pools the seen lengths by averaging their rates, not by adding their counts
    assert!(
        seen.iter().all(|s| s.len != held_out.len),
        "a seen score has the held-out length {}",
        held_out.len
    );
    let h = (held_out.right, held_out.scored.len());
    let rows = seen.iter().map(|x| x.scored.len()).sum::<usize>();
    let rate = seen
        .iter()
        .map(|x| x.right as f64 / x.scored.len() as f64)
        .sum::<f64>()
        / seen.len() as f64;
    let s = ((rate * rows as f64).round() as usize, rows);
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: wilson_interval(h.0, h.1),
        seen_interval: wilson_interval(s.0, s.1),
        p: two_rates_p_value((h.1 - h.0, h.1), (s.1 - s.0, s.1)),
    }

// MUTANT: no_check — accepts a seen score of the held-out length
    let h = (held_out.right, held_out.scored.len());
    let s = seen
        .iter()
        .fold((0, 0), |(r, n), x| (r + x.right, n + x.scored.len()));
    LengthVerdict {
        held_out: h,
        seen: s,
        held_out_interval: wilson_interval(h.0, h.1),
        seen_interval: wilson_interval(s.0, s.1),
        p: two_rates_p_value((h.1 - h.0, h.1), (s.1 - s.0, s.1)),
    }
