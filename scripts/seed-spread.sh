#!/usr/bin/env bash
# How much does the final accuracy depend on the seed? Trains the chapter 09 recipe once
# per model seed (same data: --data-seed 0) and tabulates the final exact match on the
# 1,000 validation samples. Results are deterministic per machine; only seconds vary.
#
# Usage: scripts/seed-spread.sh [--device cpu|cuda|auto] [--threads N] [SEED...]
#   Seeds default to 0 1 2 3 4. The runs go one after the other with libtorch's default
#   thread count, like `cargo run --release --bin 09_train_reverse`, so the row of the
#   default seed is exactly that run. --threads N runs them on N threads instead:
#   floating-point sums split over another number of threads round differently, and
#   training amplifies the difference within a few epochs, so this stands in for
#   "the same seeds on another machine".
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
device=auto
threads=()
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=${2:?--device needs cpu, cuda or auto}; shift 2 ;;
    --threads) threads=(--threads "${2:?--threads needs a number}"); shift 2 ;;
    -*) echo "seed-spread: unknown option '$1' (try scripts/seed-spread.sh 0 1 2)" >&2
        exit 2 ;;
    *) break ;;
  esac
done
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(0 1 2 3 4)
bin=${BIN_DIR:-target/release}/09_train_reverse
if [ -z "${BIN_DIR:-}" ] && command -v cargo >/dev/null; then
  cargo build --release --quiet --bin 09_train_reverse >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Two lines, so that the book's 85 columns hold them.
echo "seed spread of the chapter 09 recipe: ${#seeds[@]} runs, --data-seed 0, 10 epochs,"
echo "  --device $device${threads[*]:+ ${threads[*]}}"
for s in "${seeds[@]}"; do
  "$bin" --device "$device" "${threads[@]}" --seed "$s" --out "$work/seed$s.safetensors" \
    >"$work/seed$s.log" 2>&1 || true
  # The device line once (it is the same for every run), then each run's seed line.
  [ "$s" != "${seeds[0]}" ] || grep -m1 'threads=' "$work/seed$s.log" | sed 's/^/  /'
  grep -m1 'seed=' "$work/seed$s.log" | sed 's/^/  /'
done

printf '\n%4s  %-60s %s\n' seed "val exact match per epoch (500 samples)" "final (1,000)"
for s in "${seeds[@]}"; do
  per_epoch=$(sed -n 's/.*val_exact_match=\([0-9.]*\).*/\1/p' "$work/seed$s.log" | tr '\n' ' ')
  final=$(sed -n 's/^validation exact match on all [0-9]* samples: \([0-9.]*\).*/\1/p' "$work/seed$s.log")
  printf '%4s  %-60s %s\n' "$s" "$per_epoch" "${final:-failed (see below)}"
  [ -n "$final" ] || tail -n 5 "$work/seed$s.log"
done
