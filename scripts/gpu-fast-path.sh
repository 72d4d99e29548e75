#!/usr/bin/env bash
# The GPU half of issue 13 (fused Adam, the CUDA-graph training step), on a GPU machine
# that has PyTorch 2.11 but no cargo, from release binaries built elsewhere (the set-up
# of scripts/regen-cuda.sh).
#
# On the machine with cargo:
#   cargo build --release --bins
#   mkdir -p /tmp/course-bins && cp target/release/[0-9][0-9]_* target/release/bench_train /tmp/course-bins/
#   rm -f /tmp/course-bins/*.d
#   # the tests with a CUDA half, for the tests stage, as test_NAME:
#   for t in cuda_graph fused_adam precision tch_pitfalls; do
#     cp "$(cargo test --release --no-run --test $t 2>&1 | sed -n 's/^ *Executable .*(\(.*\))$/\1/p')" /tmp/course-bins/test_$t
#   done
# copy /tmp/course-bins and a checkout of this repository to the GPU machine, and there:
#   scripts/gpu-fast-path.sh /tmp/course-bins [--pack FILE] [--only STAGE]... [--skip STAGE]...
#                            [--steps N] [--regen-row NAME]... [--require-gpu] [--dry-run]
# then bring back FILE (default target/gpu-fast-path.tar.gz) and unpack it at the
# repository root: the stage outputs land in target/gpu-fast-path/, and
# target/gpu-fast-path/regen-cuda.tar (from the regen stage) holds the book's CUDA
# outputs, to unpack at the root in turn.
#
# Stages, in order (each one's output goes to target/gpu-fast-path/STAGE.txt):
#   tests    the test binaries BIN_DIR/test_* (above): their CUDA halves, which print
#            "skipped: no GPU" where libtorch sees no CUDA device (with --require-gpu
#            they fail instead)
#   rng      a captured dropout replayed twice draws different masks (bench_train --check-graph-rng)
#   agree    the first N+5 losses of an eager and a graphed run from the same seed agree to
#            bf16's accuracy (bench_train --losses, eager then --cuda-graph)
#   train    the full ten-epoch recipe with --cuda-graph: wall time (target <= 10 s on an
#            H200) and exact match (must be >= 0.99)
#   eager    the same recipe without the graph, the before of the before/after (about 60 s)
#   bench    scripts/bench-vs-pytorch.sh --device cuda: eager, fused and graphed rows, each
#            against its PyTorch twin (several minutes)
#   regen    scripts/regen-cuda.sh: every CUDA output the book shows (6-9 min)
#
# A session's device time is 15 minutes, a command's 10, and starting a machine costs
# 1-2 of them, so plan two calls:
#   1. --skip regen (rng, agree, train, eager, bench: about 5-6 min). If rng, agree and
#      train pass, make --cuda-graph the default on CUDA here and rebuild the binaries.
#   2. --only regen with the rebuilt binaries: the book's CUDA outputs, trained with the
#      graph (chapter 09's two runs then take seconds instead of a minute each).
#
#   --only STAGE  run only these stages (repeatable)
#   --skip STAGE  leave these out (repeatable)
#   --steps N     timed steps for the agree stage (default 45, after 5 untimed) and the
#                 bench stage (default 300)
#   --regen-row NAME  only this row of the regen stage (repeatable; names from
#                 scripts/regen-outputs.sh --list --cuda), to split it into shorter runs
#   --pack FILE   after every stage, (re)write FILE, a gzipped tar of the results so far
#                 (the stage outputs, and with regen the book's CUDA outputs), so that a
#                 session cut short still keeps what finished
#   --require-gpu a missing GPU is an error everywhere: the tests' CUDA halves fail
#                 instead of printing "skipped: no GPU" (COURSE_REQUIRE_GPU=1), e.g. when
#                 the binaries load a libtorch without CUDA although nvidia-smi sees a GPU
#   --dry-run     check the arguments and the binaries, print the commands, run nothing
#
# It finds torch's lib/ folder through PYTHON (default python3), puts it on
# LD_LIBRARY_PATH so the binaries load that libtorch instead of the one their rpath
# names, and checks that the versions agree before running anything.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

usage="usage: scripts/gpu-fast-path.sh BIN_DIR [--pack FILE] [--only STAGE]... [--skip STAGE]... [--steps N] [--regen-row NAME]... [--require-gpu] [--dry-run]"
all_stages=(tests rng agree train eager bench regen)
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
case $1 in -h|--help) awk 'NR > 1 && /^set -euo/ { exit } NR > 1' "$0"; exit 0 ;; -*) echo "$usage" >&2; exit 2 ;; esac
bin_dir=$1
shift
pack=target/gpu-fast-path.tar.gz
only=()
skip=()
steps=""
regen_rows=()
dry_run=0
require_gpu=0
known_stage() { [[ " ${all_stages[*]} " == *" $1 "* ]]; }
while [ $# -gt 0 ]; do
  case $1 in
    --pack) pack=${2:?--pack needs a file}; shift 2 ;;
    --only|--skip)
      stage=${2:?$1 needs a stage name}
      known_stage "$stage" || { echo "gpu-fast-path: unknown stage '$stage' (${all_stages[*]})" >&2; exit 2; }
      if [ "$1" = --only ]; then only+=("$stage"); else skip+=("$stage"); fi
      shift 2 ;;
    --steps)
      steps=${2:?--steps needs a number}
      [[ $steps =~ ^[1-9][0-9]*$ ]] || { echo "gpu-fast-path: --steps needs a positive whole number, not '$steps'" >&2; exit 2; }
      shift 2 ;;
    --regen-row) regen_rows+=("${2:?--regen-row needs a name}"); shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --require-gpu) require_gpu=1; shift ;;
    -h|--help) awk 'NR > 1 && /^set -euo/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "gpu-fast-path: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
[ -d "$bin_dir" ] || { echo "gpu-fast-path: $bin_dir is not a folder of binaries" >&2; exit 2; }
bin_dir=$(cd "$bin_dir" && pwd)

stages=()
for s in "${all_stages[@]}"; do
  if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $s "* ]]; then continue; fi
  if [[ " ${skip[*]+${skip[*]}} " == *" $s "* ]]; then continue; fi
  stages+=("$s")
done
[ ${#stages[@]} -gt 0 ] || { echo "gpu-fast-path: no stage left to run" >&2; exit 2; }

need=()
for s in "${stages[@]}"; do
  case $s in
    rng|agree|bench) need+=(bench_train) ;;
    train|eager) need+=(09_train_reverse) ;;
    regen) need+=(09_train_reverse 10_greedy_decode 11_cross_attention 12_sdpa_bench) ;;
  esac
done
test_bins=()
for t in "$bin_dir"/test_*; do [ -x "$t" ] && test_bins+=("$t"); done
if [[ " ${stages[*]} " == *" tests "* ]] && [ ${#test_bins[@]} -eq 0 ]; then
  echo "gpu-fast-path: no test binaries $bin_dir/test_* for the tests stage (see the top of this script)" >&2; exit 1
fi
for b in "${need[@]+"${need[@]}"}"; do
  [ -x "$bin_dir/$b" ] || { echo "gpu-fast-path: $bin_dir/$b is missing (see the top of this script)" >&2; exit 1; }
done

out=target/gpu-fast-path
regen_only=()
for r in "${regen_rows[@]+"${regen_rows[@]}"}"; do regen_only+=(--only "$r"); done
agree_steps=${steps:-45}
bench_steps=${steps:-300}
data_dir=$out/checkpoints

# ---- the commands of each stage (printed by --dry-run, run otherwise)
stage_commands() {
  case $1 in
    tests) for t in "${test_bins[@]}"; do echo "$t --test-threads 1 --nocapture"; done ;;
    rng) echo "$bin_dir/bench_train --device cuda --check-graph-rng" ;;
    agree)
      echo "$bin_dir/bench_train --device cuda --steps $agree_steps --losses $out/losses_eager.txt"
      echo "$bin_dir/bench_train --device cuda --steps $agree_steps --cuda-graph --losses $out/losses_graph.txt" ;;
    train) echo "$bin_dir/09_train_reverse --device cuda --cuda-graph --out $data_dir/reverse_graph.safetensors" ;;
    eager) echo "$bin_dir/09_train_reverse --device cuda --out $data_dir/reverse_eager.safetensors" ;;
    bench) echo "scripts/bench-vs-pytorch.sh --no-build --device cuda --steps $bench_steps --rounds 2" ;;
    regen) echo "scripts/regen-cuda.sh $bin_dir --pack $out/regen-cuda.tar${regen_only[*]+ ${regen_only[*]}}" ;;
  esac
}

# The tests' CUDA halves read this; without it they print "skipped: no GPU".
[ "$require_gpu" = 1 ] && export COURSE_REQUIRE_GPU=1

if [ "$dry_run" = 1 ]; then
  echo "gpu-fast-path: dry run; stages: ${stages[*]}; results packed into $pack${COURSE_REQUIRE_GPU:+; COURSE_REQUIRE_GPU=1}"
  for s in "${stages[@]}"; do
    while IFS= read -r c; do echo "  [$s] $c"; done < <(stage_commands "$s")
  done
  exit 0
fi

python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "gpu-fast-path: $python not found (set PYTHON to a Python with torch 2.11)" >&2; exit 1; }
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') || {
  echo "gpu-fast-path: $python cannot import torch" >&2; exit 1; }
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
case $torch_version in
  2.11.0*) ;;
  *) echo "gpu-fast-path: this torch is $torch_version; the binaries were built against libtorch 2.11.0" >&2; exit 1 ;;
esac
export BIN_DIR=$bin_dir PYTHON=$python LD_LIBRARY_PATH=$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1 || true)
[ -n "$gpu" ] || { echo "gpu-fast-path: nvidia-smi sees no GPU; this script is for a GPU machine" >&2; exit 1; }
"$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' || {
  echo "gpu-fast-path: torch sees no CUDA device" >&2; exit 1; }
if missing=$(ldd "$bin_dir/bench_train" 2>/dev/null | grep 'not found'); then
  echo "gpu-fast-path: bench_train cannot load its libraries:" >&2
  echo "$missing" >&2
  exit 1
fi

mkdir -p "$out" "$data_dir"
{
  echo "gpu:      $gpu"
  echo "torch:    $torch_version from $torch_lib"
  echo "binaries: $bin_dir"
  echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "stages:   ${stages[*]}"
} | tee "$out/machine.txt"

pack_results() {
  local files=("$out"/*.txt)
  [ -f "$out/regen-cuda.tar" ] && files+=("$out/regen-cuda.tar")
  tar -czf "$pack.tmp" "${files[@]}" && mv "$pack.tmp" "$pack"
}

# Runs one command of a stage with its output appended to the stage's file.
run_logged() { # file command...
  local file=$1; shift
  echo "\$ $*" >>"$file"
  "$@" >>"$file" 2>&1
}

now() { date +%s.%N; }

# Every test binary, one test at a time (the CUDA tests share one GPU); a test
# binary that says "skipped: no GPU" did not check its CUDA half, so the stage
# counts those lines.
stage_tests() {
  local f=$out/tests.txt status=0 t
  for t in "${test_bins[@]}"; do
    run_logged "$f" "$t" --test-threads 1 --nocapture || status=1
  done
  local skipped
  skipped=$(grep -c '^skipped: no GPU' "$f" || true)
  echo "tests: $skipped CUDA half(s) skipped for want of a GPU" >>"$f"
  return $status
}

stage_rng() {
  run_logged "$out/rng.txt" "$bin_dir/bench_train" --device cuda --check-graph-rng
}

stage_agree() {
  local f=$out/agree.txt
  run_logged "$f" "$bin_dir/bench_train" --device cuda --steps "$agree_steps" --losses "$out/losses_eager.txt" &&
    run_logged "$f" "$bin_dir/bench_train" --device cuda --steps "$agree_steps" --cuda-graph --losses "$out/losses_graph.txt" &&
    "$python" - "$out/losses_eager.txt" "$out/losses_graph.txt" >>"$f" 2>&1 <<'EOF'
import sys
eager = [float(x) for x in open(sys.argv[1])]
graph = [float(x) for x in open(sys.argv[2])]
assert len(eager) == len(graph), f"{len(eager)} eager losses, {len(graph)} graphed"
# bf16 autocast: about 3 significant digits per operation; over a few dozen steps the
# two runs may drift apart a little, never by more than a few percent.
TOL = 2e-2
worst = max(abs(e - g) / max(abs(e), 1.0) for e, g in zip(eager, graph))
print("step  eager     graphed   |diff|")
for i, (e, g) in enumerate(zip(eager, graph), 1):
    if i <= 10 or i % 10 == 0 or i == len(eager):
        print(f"{i:4d}  {e:.5f}  {g:.5f}  {abs(e - g):.2e}")
verdict = "ok" if worst <= TOL else "FAILED"
print(f"agreement: {len(eager)} steps from the same seed, largest relative difference "
      f"{worst:.2e} (tolerance {TOL:.0e}): {verdict}")
sys.exit(0 if worst <= TOL else 1)
EOF
}

# A full run of chapter 09's recipe; the wall time includes start-up and data.
train_run() { # name extra-args...
  local name=$1; shift
  local f=$out/$name.txt start end
  start=$(now)
  run_logged "$f" "$bin_dir/09_train_reverse" --device cuda "$@" || return 1
  end=$(now)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "wall time: %.1f s (start-up, data, training, evaluation)\n", e - s }' >>"$f"
  local em
  em=$(sed -n 's/^validation exact match on all [0-9,]* samples: \([0-9.]*\).*/\1/p' "$f" | tail -n1)
  [ -n "$em" ] || { echo "no exact-match line" >>"$f"; return 1; }
  awk -v em="$em" 'BEGIN { ok = em >= 0.99; printf "exact match %s: %s (needs >= 0.99)\n", em, ok ? "ok" : "FAILED"; exit !ok }' >>"$f"
}

stage_train() {
  train_run train --cuda-graph --out "$data_dir/reverse_graph.safetensors" || return 1
  awk '/^wall time:/ { t = $3 } END { printf "target: <= 10 s on an H200, stretch <= 5 s: %s\n", (t <= 10 ? "met" : "missed") }' \
    "$out/train.txt" >>"$out/train.txt"
}

stage_eager() {
  train_run eager --out "$data_dir/reverse_eager.safetensors"
}

stage_bench() {
  run_logged "$out/bench.txt" scripts/bench-vs-pytorch.sh --no-build --device cuda --steps "$bench_steps" --rounds 2
}

stage_regen() {
  run_logged "$out/regen.txt" scripts/regen-cuda.sh "$bin_dir" --pack "$out/regen-cuda.tar" \
    "${regen_only[@]+"${regen_only[@]}"}"
}

failed=()
for s in "${stages[@]}"; do
  : >"$out/$s.txt"
  start=$SECONDS
  echo "gpu-fast-path: $s ..." >&2
  if "stage_$s"; then status=ok; else status=FAILED; failed+=("$s"); fi
  echo "gpu-fast-path: $s $status after $((SECONDS - start)) s" | tee -a "$out/$s.txt" >&2
  grep -E '^(tests: |test result|graph rng|agreement|wall time|exact match|target|validation exact match|epoch 10 |  (eager|fused|graph) |  graphed Rust)' \
    "$out/$s.txt" >&2 || true
  pack_results
done
echo "gpu-fast-path: results in $out, packed into $pack" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-fast-path: FAILED: ${failed[*]}" >&2
  exit 1
fi
