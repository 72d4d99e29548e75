#!/usr/bin/env bash
# How long a learner waits between saving an exercise and seeing its tests' verdict:
# edits one line of an exercise file (a comment, so the code means the same), runs
# `cargo test --test exercises_chNN`, and prints the median of three such rounds,
# after one warm-up build. The file is restored afterwards, whatever happens.
#
#   scripts/learner-loop.sh [NN]      chapter NN's exercises (default 03)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
nn=${1:-03}
[[ $nn =~ ^(0[1-9]|1[0-2])$ ]] || { echo "learner-loop.sh: chapter must be 01..12, not '$nn'" >&2; exit 2; }
file=$(ls exercises/src/ch"$nn"_*.rs)
backup=$(mktemp)
cp -p "$file" "$backup"
trap 'cp -p "$backup" "$file"; rm -f "$backup"' EXIT

echo "learner-loop: warm-up build of the exercise tests of chapter $nn" >&2
cargo test --quiet --test "exercises_ch$nn" >/dev/null 2>&1 || true

times=()
for round in 1 2 3; do
  echo "// edited by scripts/learner-loop.sh, round $round" >>"$file"
  start=$(date +%s.%N)
  log=$(cargo test --quiet --test "exercises_ch$nn" 2>&1 || true)
  end=$(date +%s.%N)
  # Failing tests are fine (the student edition); a run that tested nothing is not.
  grep -q "test result:" <<<"$log" || { echo "learner-loop.sh: the tests did not run:" >&2; echo "$log" | tail -n 20 >&2; exit 1; }
  times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')")
  cp -p "$backup" "$file"
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
printf 'learner loop (edit %s, then cargo test --test exercises_ch%s): median %.1f s of %s\n' \
  "$file" "$nn" "$median" "$(printf '%.1f ' "${times[@]}")"
