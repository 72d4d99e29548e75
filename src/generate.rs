//! Chapter 10 — greedy decoding. At inference there is no answer to feed the
//! decoder: it must read back what it has produced so far, one token at a time.
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

use crate::data::{row, source_tensor};
use crate::transformer::Transformer;
use crate::vocab::{digits_of, BOS_ID, EOS_ID, PAD_ID, SEQ_LEN};

// ANCHOR: greedy
/// src: [B, Ls] → [B, ≤ max_len], each row `BOS t₁ t₂ … EOS PAD…`.
/// The encoder runs once; the decoder runs once per new token on everything
/// produced so far (a KV cache, chapter 10's exercise, would keep its keys and
/// values instead of recomputing them).
pub fn greedy_decode(
    model: &Transformer,
    src: &Tensor,
    max_len: usize,
) -> Tensor {
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let (b, device) = (src.size()[0], src.device());
        let mut out = Tensor::full([b, 1], BOS_ID, (Kind::Int64, device)); // [B, 1]
        let mut finished = Tensor::zeros([b], (Kind::Bool, device)); // [B]
        for _ in 0..max_len - 1 {
            let logits = model.decode(&out, &memory, &src_mask, false); // [B, t, V]
            let next = logits.select(1, -1).argmax(-1, false); // [B]

            // Rows that already said EOS emit PAD, so the batch stays rectangular.
            let next = next.masked_fill(&finished, PAD_ID);
            out = Tensor::cat(&[out, next.unsqueeze(1)], 1); // [B, t+1]
            finished = finished.logical_or(&next.eq(EOS_ID));
            if finished.all().int64_value(&[]) != 0 {
                break;
            }
        }
        out
    })
}
// ANCHOR_END: greedy

#[counted::counted("exact_match", keep = src.shallow_clone())]
// ANCHOR: exact_match
/// Share of rows whose generated digits and EOS equal the target's exactly.
/// Stricter than token accuracy: one wrong digit in twelve fails the whole row.
pub fn exact_match(
    model: &Transformer,
    src: &Tensor,
    tgt: &Tensor,
    batch: i64,
) -> f64 {
    let right = correct_rows(model, src, tgt, batch);
    right.iter().filter(|&&r| r).count() as f64 / right.len() as f64
}

/// For every row of `src`, whether greedy decoding reproduces `tgt` exactly;
/// decodes `batch` rows at a time.
pub fn correct_rows(
    model: &Transformer,
    src: &Tensor,
    tgt: &Tensor,
    batch: i64,
) -> Vec<bool> {
    let n = src.size()[0];
    let mut right = Vec::with_capacity(n as usize);
    for start in (0..n).step_by(batch as usize) {
        let len = batch.min(n - start);
        let src = src.narrow(0, start, len).to_device(model.device());
        let pred = greedy_decode(model, &src, SEQ_LEN).to_device(Device::Cpu);
        for i in 0..len {
            right.push(row_is_right(&row(&pred, i), &row(tgt, start + i)));
        }
    }
    right
}

/// Same digits, and the prediction really ended with EOS right after them.
pub fn row_is_right(pred: &[i64], tgt: &[i64]) -> bool {
    let digits = digits_of(tgt);
    let ended = pred.get(digits.len() + 1) == Some(&EOS_ID);
    ended && digits_of(pred) == digits
}
// ANCHOR_END: exact_match

/// Greedily reverses `digits` with `model`; returns the predicted digits.
pub fn reverse_digits(model: &Transformer, digits: &[i64]) -> Vec<i64> {
    let src = source_tensor(digits, model.device());
    digits_of(&row(&greedy_decode(model, &src, SEQ_LEN), 0))
}

// ANCHOR: wilson
/// The 95 % Wilson score interval for a success rate of `k` in `n`: the range
/// of true rates that `k` of `n` does not rule out. Unlike p ± 1.96·√(p(1-p)/n),
/// it does not shrink to a point at 0 of n or n of n: 100 right of 100 still
/// allows a true rate of 0.963.
pub fn wilson_interval(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0); // no data: every rate is possible
    }
    let (z, n) = (1.959_964, n as f64); // the normal's 97.5th percentile
    let p = k as f64 / n;
    let z2n = z * z / n;
    let centre = (p + z2n / 2.0) / (1.0 + z2n);
    let half = z * (p * (1.0 - p) / n + z2n / (4.0 * n)).sqrt() / (1.0 + z2n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}
// ANCHOR_END: wilson

// ANCHOR: same_rate
/// Could every group share one miss rate? `groups[i]` is (misses, rows) of
/// group i. If the group made no difference, the misses would fall on rows
/// at random; this scatters them at random `draws` times and returns the
/// share of scatterings at least as uneven as the real one, by Pearson's χ²
/// (Σ (misses − expected)² / expected). A permutation test: it needs no
/// large counts, which a few dozen misses over ten lengths are not.
pub fn same_rate_p_value(
    groups: &[(usize, usize)],
    draws: usize,
    seed: u64,
) -> f64 {
    let rows: usize = groups.iter().map(|g| g.1).sum();
    let misses: usize = groups.iter().map(|g| g.0).sum();
    if misses == 0 || misses == rows {
        return 1.0; // nothing to scatter
    }
    let share = misses as f64 / rows as f64;
    let chi2 = |counts: &[usize]| -> f64 {
        let cells = counts.iter().zip(groups).filter(|(_, g)| g.1 > 0);
        cells
            .map(|(&k, g)| {
                let expected = share * g.1 as f64;
                (k as f64 - expected).powi(2) / expected
            })
            .sum()
    };
    let real: Vec<usize> = groups.iter().map(|g| g.0).collect();
    let observed = chi2(&real);
    // Row r belongs to group of_row[r].
    let mut of_row: Vec<usize> = (0..groups.len())
        .flat_map(|i| std::iter::repeat_n(i, groups[i].1))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut as_uneven = 0;
    for _ in 0..draws {
        // `misses` rows drawn without replacement.
        let (hit, _) = of_row.partial_shuffle(&mut rng, misses);
        let mut counts = vec![0; groups.len()];
        hit.iter().for_each(|&g| counts[g] += 1);
        as_uneven += (chi2(&counts) >= observed - 1e-9) as usize;
    }
    // The real scattering counts as one of the draws, so p is never 0.
    (as_uneven + 1) as f64 / (draws + 1) as f64
}
// ANCHOR_END: same_rate

#[counted::counted]
// ANCHOR: two_rates
/// Do two groups share one miss rate? Fisher's exact test, two-sided: `a` and
/// `b` are (misses, rows). Given the rows of each group and the misses of both
/// together, each way the misses could split between the groups has a known
/// chance (the hypergeometric distribution: choose which rows of each group
/// miss, out of all ways to choose the misses among all rows). p is the total
/// chance of the splits no likelier than the real one. Exact: no large counts
/// needed, no draws.
pub fn two_rates_p_value(a: (usize, usize), b: (usize, usize)) -> f64 {
    assert!(
        a.0 <= a.1 && b.0 <= b.1,
        "more misses than rows: {a:?} {b:?}"
    );
    let (misses, rows) = (a.0 + b.0, a.1 + b.1);
    // ln k! for k = 0..=rows, so that large counts do not overflow.
    let mut ln_fact = vec![0.0; rows + 1];
    for k in 1..=rows {
        ln_fact[k] = ln_fact[k - 1] + (k as f64).ln();
    }
    let ln_choose =
        |n: usize, k: usize| ln_fact[n] - ln_fact[k] - ln_fact[n - k];
    // The chance that group a holds k of the misses.
    let chance = |k: usize| {
        (ln_choose(a.1, k) + ln_choose(b.1, misses - k)
            - ln_choose(rows, misses))
        .exp()
    };
    let real = chance(a.0);
    let splits = misses.saturating_sub(b.1)..=misses.min(a.1);
    // A relative tolerance keeps a split exactly as likely as the real one,
    // computed with other rounding, in the sum.
    let p: f64 = splits
        .map(chance)
        .filter(|&c| c <= real * (1.0 + 1e-7))
        .sum();
    p.min(1.0)
}
// ANCHOR_END: two_rates

/// Paired rates: the same rows scored twice, `lost` of them right only the first
/// time and `gained` right only the second. If the change made no difference,
/// each of these flips would go either way with chance 1/2; p is the two-sided
/// chance of flips at least this lopsided (the exact sign test).
pub fn sign_test_p_value(lost: usize, gained: usize) -> f64 {
    let n = lost + gained;
    let fewer = lost.min(gained);
    // C(n, i) / 2^n, summed over i = 0..=fewer, in logs so that n may be large.
    let mut ln_choose = 0.0;
    let mut tail = 0.0;
    for i in 0..=fewer {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64 / i as f64).ln();
        }
        tail += (ln_choose - n as f64 * 2f64.ln()).exp();
    }
    (2.0 * tail).min(1.0)
}

/// Across seeds: `diffs[s]` is seed s's run minus its reference run of the same
/// seed. If the change made no difference, each seed's difference would be as
/// likely to have the other sign; p is the share of the 2^n sign flips whose mean
/// is at least as far from 0 as the real one (the exact paired permutation test,
/// two-sided). It can never go below 2/2^n: 0.25 with 3 seeds, 0.0078 with 8.
pub fn sign_flip_p_value(diffs: &[f64]) -> f64 {
    let n = diffs.len();
    assert!((1..=20).contains(&n), "1 to 20 paired differences, not {n}");
    let real = diffs.iter().sum::<f64>().abs();
    let as_far = (0u32..1 << n)
        .filter(|flips| {
            let sum: f64 = diffs
                .iter()
                .enumerate()
                .map(|(i, d)| if flips >> i & 1 == 1 { -d } else { *d })
                .sum();
            // A tolerance so that a flip with exactly the real mean counts,
            // whatever order the additions rounded in.
            sum.abs() >= real - 1e-12
        })
        .count();
    as_far as f64 / (1u64 << n) as f64
}

/// The mean of paired differences and its 95% interval, mean ± t · sd/√n with
/// Student's t for n − 1 degrees of freedom (2 to 10 differences): the effects
/// still compatible with the seeds, assuming their spread is bell-shaped.
pub fn mean_interval_95(diffs: &[f64]) -> (f64, f64, f64) {
    // t's 97.5% point for 1 to 9 degrees of freedom.
    const T975: [f64; 9] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
    ];
    let n = diffs.len();
    assert!((2..=10).contains(&n), "2 to 10 paired differences, not {n}");
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let var =
        diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = T975[n - 2] * (var / n as f64).sqrt();
    (mean, mean - half, mean + half)
}

/// Holm's correction: which of `ps` stay below `alpha` when all of them were
/// tested. The smallest must be below alpha/m, the next below alpha/(m − 1), and
/// so on; the first that is not stops the rest.
pub fn holm_passes(ps: &[f64], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut passes = vec![false; ps.len()];
    for (rank, &i) in order.iter().enumerate() {
        if ps[i] >= alpha / (ps.len() - rank) as f64 {
            break;
        }
        passes[i] = true;
    }
    passes
}
