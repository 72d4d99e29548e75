// Wrong solutions of ex12_max_len.

// MUTANT: float_sqrt — a plain floating-point square root, never corrected
    let bytes = kind.elt_size_in_bytes() as f64;
    (budget as f64 / (copies as f64 * (b * h) as f64 * bytes)).sqrt() as i64

// MUTANT: ignores_copies — the budget of one score matrix
    let bytes = kind.elt_size_in_bytes() as u128;
    let per_square = (b * h) as u128 * bytes;
    let fits = |l: i64| (l as u128) * (l as u128) * per_square <= budget as u128;
    let mut l = (budget as f64 / per_square as f64).sqrt() as i64;
    while fits(l + 1) {
        l += 1;
    }
    while l > 0 && !fits(l) {
        l -= 1;
    }
    l

// MUTANT: one_too_many — stops at the first length that does not fit
    let bytes = kind.elt_size_in_bytes() as u128;
    let per_square = copies as u128 * (b * h) as u128 * bytes;
    let fits = |l: i64| (l as u128) * (l as u128) * per_square <= budget as u128;
    let mut l = (budget as f64 / per_square as f64).sqrt() as i64;
    while fits(l) {
        l += 1;
    }
    l
