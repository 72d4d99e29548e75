#!/usr/bin/env bash
# Runs the answer key's exercise experiments from the exercise solutions
# (exercises/src/bin/exercise_experiments.rs):
#   masks      ex06's broken causal masks and ex07's triu(2), chapter 07's causality check
#   kv-cache   greedy_decode against ex10's greedy_decode_cached, timed
#   copy-task  ex08's copy task against the reversal, chapter 09's training
#   norms      ex03's SwiGLU against GELU at a matched budget; ex04's Post-Norm against
#              Pre-Norm, with chapter 09's warmup and with its peak rate from step 1
#   post-norm  ex13's Post-Norm without warmup against the ablation study's Post-Norm,
#              on the whole model, the study's budget, three seeds
#   unseen-length  ex09's lengths never trained on: chapter 09's model without length 7,
#              and on lengths 3-10 only, scored at lengths 4-12
#   find-a-head  ex11's previous-token head: chapter 09's model trained 4 epochs, every
#              self-attention head scored, the strongest switched off on unseen sequences
#   dates      ex14's questions on chapter 14's model: where each head's cross-attention
#              peaks, and greedy decoding against beams of width 2 and 4 on its 5,000
#              held-out dates, as paired rows
#
#   scripts/exercise-experiments.sh            all eight, written to book/src/outputs/
#                                              exercise_<name>.txt by scripts/regen-outputs.sh
#                                              (about 55 minutes on 2 cores)
#   scripts/exercise-experiments.sh --quick    all eight shrunk to seconds, printed only:
#                                              a check that they run, not the book's numbers
#   scripts/exercise-experiments.sh NAME...    only these (masks, kv-cache, copy-task, norms,
#                                              post-norm, unseen-length, find-a-head, dates)
#   scripts/exercise-experiments.sh --run NAME one experiment, printed, from the binary in
#                                              ${BIN_DIR:-target/release} (what regen-outputs.sh runs)
#
# In the student edition they run your solutions: a todo!() stops the experiment
# that needs it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
quick=0
names=()
if [ "${1:-}" = --run ]; then
  [ $# -eq 2 ] || { echo "exercise-experiments.sh: --run needs one name" >&2; exit 2; }
  exec "${BIN_DIR:-target/release}/exercise_experiments" "$2"
fi
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    masks|kv-cache|copy-task|norms|post-norm|unseen-length|find-a-head|dates) names+=("$a") ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "exercise-experiments.sh: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=(masks kv-cache copy-task norms post-norm unseen-length find-a-head dates)
if [ $quick = 1 ]; then
  cargo build --release --bin exercise_experiments
  for n in "${names[@]}"; do
    echo "== exercise_experiments $n --quick"
    target/release/exercise_experiments "$n" --quick
  done
else
  only=()
  for n in "${names[@]}"; do only+=(--only "exercise_${n//-/_}"); done
  exec scripts/regen-outputs.sh "${only[@]}"
fi
