#!/usr/bin/env bash
# Chapter 14's recipe on several model seeds: the same data, split and budget as
# `cargo run --release --bin 14_dates`, one run per seed, each scored on the same
# 5,000 held-out samples. Prints each seed's exact match, then the mean across seeds
# with its 95% interval (mean +- t * sd / sqrt(n), Student's t for n - 1 degrees of
# freedom): the rates a fresh seed of this recipe is expected to reach, which one run's
# interval (noise of the test rows only) does not tell.
#
# Usage: scripts/dates-seeds.sh [--threads N] [SEED...]   (seeds default to 0 1 2)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
threads=()
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=(--threads "${2:?--threads needs a number}"); shift 2 ;;
    -*) echo "dates-seeds: unknown option '$1' (try scripts/dates-seeds.sh 0 1 2)" >&2
        exit 2 ;;
    *) break ;;
  esac
done
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(0 1 2)
if [ ${#seeds[@]} -lt 2 ] || [ ${#seeds[@]} -gt 10 ]; then
  echo "dates-seeds: give 2 to 10 seeds, not ${#seeds[@]}" >&2
  exit 2
fi
bin=${BIN_DIR:-target/release}/14_dates
if [ -z "${BIN_DIR:-}" ] && command -v cargo >/dev/null; then
  cargo build --release --quiet --bin 14_dates >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "chapter 14's recipe on ${#seeds[@]} seeds (defaults of 14_dates${threads[*]:+, ${threads[*]}})"
printf '\n%4s  %6s  %6s  %8s  %s\n' seed right of rate "95% interval (test rows)"
rates=()
for s in "${seeds[@]}"; do
  if ! "$bin" "${threads[@]}" --seed "$s" --out-dir "$work/seed$s" >"$work/seed$s.log" 2>&1; then
    echo "dates-seeds: seed $s failed:" >&2
    tail -n 5 "$work/seed$s.log" >&2
    exit 1
  fi
  # "held-out exact match: K of N = R  (95% interval LO to HI)"
  read -r k n rate lo hi < <(sed -n \
    's/^held-out exact match: \([0-9]*\) of \([0-9]*\) = \([0-9.]*\) .*interval \([0-9.]*\) to \([0-9.]*\))$/\1 \2 \3 \4 \5/p' \
    "$work/seed$s.log")
  printf '%4s  %6s  %6s  %8s  %s to %s\n' "$s" "$k" "$n" "$rate" "$lo" "$hi"
  rates+=("$rate")
done

# Student's t, 97.5% point, for 1 to 9 degrees of freedom.
printf '%s\n' "${rates[@]}" | awk '
  BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262", t, " ") }
  { x[NR] = $1; sum += $1 }
  END {
    n = NR; mean = sum / n
    for (i = 1; i <= n; i++) ss += (x[i] - mean) ^ 2
    sd = sqrt(ss / (n - 1)); half = t[n - 1] * sd / sqrt(n)
    printf "\nacross %d seeds: mean %.4f, sd %.4f, 95%% interval %.4f to %.4f\n", n, mean, sd, mean - half, mean + half
    printf "(t = %.3f for %d degrees of freedom; the interval is for the recipe, not one model)\n", t[n - 1], n - 1
  }'
