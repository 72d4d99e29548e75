#!/usr/bin/env bash
# Training speed of the Rust model (tch on libtorch) against the PyTorch twin in
# scripts/torch_reference.py, on this machine, one after the other.
#
# Both run the reversal-task recipe of chapter 09 (batch 64, d=128, 2+2 layers,
# dropout 0.1, Adam with the warmup schedule) on the same libtorch version, take 5
# untimed warm-up steps, then time N optimizer steps with T intra-op threads: on the CPU
# in float32, with --device cuda in bf16 autocast with TF32 (both sides).
#
# Usage: scripts/bench-vs-pytorch.sh [--steps N] [--threads T] [--rounds R] [--device D] [--no-build]
#   --rounds R    alternate the two R times and compare medians (env BENCH_ROUNDS, default 3)
#   --steps N     timed optimizer steps per implementation   (env BENCH_STEPS,   default 200)
#   --threads T   libtorch intra-op threads for both         (env BENCH_THREADS, default nproc)
#   --device D    cpu (default) or cuda
#   --no-build    use the 09_train_reverse binary as it is
# Environment: PYTHON (default .venv/bin/python, from scripts/setup.sh) is the Python with
# torch; BIN_DIR (default target/release) holds 09_train_reverse. On a GPU machine without
# cargo: BIN_DIR=... PYTHON=python3 LD_LIBRARY_PATH=<torch>/lib scripts/bench-vs-pytorch.sh --no-build --device cuda
#
# The CPU numbers only mean something on an otherwise idle machine: with other jobs on
# the same cores, OpenMP's worker threads wait on each other and multi-threaded runs slow
# down many times over.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

steps=${BENCH_STEPS:-200}
rounds=${BENCH_ROUNDS:-3}
threads=${BENCH_THREADS:-$(nproc)}
device=cpu
build=1
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=${2:?--steps needs a value}; shift 2 ;;
    --steps=*) steps=${1#*=}; shift ;;
    --threads) threads=${2:?--threads needs a value}; shift 2 ;;
    --threads=*) threads=${1#*=}; shift ;;
    --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
    --rounds=*) rounds=${1#*=}; shift ;;
    --device) device=${2:?--device needs a value}; shift 2 ;;
    --device=*) device=${1#*=}; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench-vs-pytorch.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case $device in cpu|cuda) ;; *) echo "bench-vs-pytorch.sh: --device must be cpu or cuda, not '$device'" >&2; exit 2 ;; esac
for v in "$steps" "$threads" "$rounds"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench-vs-pytorch.sh: '$v' is not a positive integer" >&2; exit 2; }
done

python=${PYTHON:-$repo/.venv/bin/python}
command -v "$python" >/dev/null || { echo "bench-vs-pytorch.sh: $python not found; run scripts/setup.sh first (or set PYTHON)" >&2; exit 1; }
bin_dir=${BIN_DIR:-$repo/target/release}
bin=$bin_dir/09_train_reverse
logs=$repo/target/bench-vs-pytorch
mkdir -p "$logs"

# ---- the machine
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)
cpu=${cpu:-unknown CPU}
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
libtorch_dir=$(readlink -f "$repo/.libtorch" 2>/dev/null || echo "$repo/.libtorch")
[ -n "${LD_LIBRARY_PATH:-}" ] && libtorch_dir="LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "== Rust (tch 0.24) vs PyTorch: training speed on the reversal task"
echo "date:      $(date '+%Y-%m-%d %H:%M:%S %Z')"
echo "machine:   $cpu, $(nproc) cores available ($(grep -c '^processor' /proc/cpuinfo) logical CPUs)"
echo "torch:     $torch_version (Python side); libtorch for Rust: $libtorch_dir"
if [ "$device" = cuda ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)
  echo "gpu:       ${gpu:-unknown}"
  precision="CUDA, bf16 autocast + TF32"
else
  precision="CPU, float32"
fi
echo "run:       $steps timed steps after 5 untimed, $threads thread(s), $precision, batch 64, $rounds alternating rounds"
# Give the machine up to 90 s to settle after whatever ran before (the 1-minute load
# average decays slowly, so this waits for it to fall under 0.5, not for zero).
# (Only for the CPU: on CUDA the earlier runs' load average does not slow the GPU, and
# device time is the scarce thing there.)
[ "$device" = cpu ] && for _ in $(seq 18); do
  read -r load1 _ < /proc/loadavg
  awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }' || break
  sleep 5
done
read -r load1 _ < /proc/loadavg
echo "load:      $load1 (1-minute average before starting)"
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  echo "warning:   the machine is not idle; the timings below will be noisy or much too slow" >&2
fi
echo

# ---- build
if [ "$build" = 1 ]; then
  echo "-- cargo build --release --bin 09_train_reverse"
  cargo build --release --bin 09_train_reverse
fi
[ -x "$bin" ] || { echo "bench-vs-pytorch.sh: $bin is missing (build it, or drop --no-build)" >&2; exit 1; }

# Runs a command, keeps its output in $logs/NAME.log, prints its bench: line.
bench_line() { # name command...
  local name=$1; shift
  local log=$logs/$name.log
  echo "-- $*" >&2
  if ! "$@" >"$log" 2>&1; then
    echo "bench-vs-pytorch.sh: $name failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  local line
  line=$(grep '^bench: ' "$log" | tail -n1 || true)
  if [ -z "$line" ]; then
    echo "bench-vs-pytorch.sh: $name printed no 'bench:' line; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  echo "$line"
}

# ---- run, alternating, so that a slow patch of the machine hits both sides alike
rust_lines=()
torch_lines=()
for ((r = 1; r <= rounds; r++)); do
  rust_lines+=("$(bench_line rust "$bin" --bench-steps "$steps" --threads "$threads" --device "$device")")
  torch_lines+=("$(bench_line pytorch "$python" scripts/torch_reference.py train --steps "$steps" --threads "$threads" --device "$device")")
done

field() { # line key -> value of key=value
  sed -n "s/.*[[:space:]]$2=\([^[:space:]]*\).*/\1/p" <<<"$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo
printf '%-10s %6s %7s %8s %10s %9s\n' impl round steps threads seconds steps/s
for ((r = 0; r < rounds; r++)); do
  for line in "${rust_lines[$r]}" "${torch_lines[$r]}"; do
    printf '%-10s %6s %7s %8s %10s %9s\n' "$(field "$line" impl)" "$((r + 1))" "$(field "$line" steps)" \
      "$(field "$line" threads)" "$(field "$line" seconds)" "$(field "$line" steps_per_s)"
  done
done
rust_s=$(for l in "${rust_lines[@]}"; do field "$l" seconds; done | median)
torch_s=$(for l in "${torch_lines[@]}"; do field "$l" seconds; done | median)
awk -v r="$rust_s" -v p="$torch_s" 'BEGIN {
  if (p <= 0) { print "ratio: PyTorch time is 0, no ratio"; exit }
  q = r / p
  printf "\nmedian seconds: rust %.3f, pytorch %.3f\nRust time / PyTorch time = %.2f  (%s)\n", r, p, q,
    (q < 0.97 ? "below 1: Rust is faster" : (q > 1.03 ? "above 1: PyTorch is faster" : "within 3%: about the same"))
}'
echo
echo "where a step's time goes (last round):"
if [ "$device" = cuda ]; then
  echo "  (on CUDA a call returns once its kernels are queued: the phases measure the host's"
  echo "   launching, and the wait for the GPU lands in read-back, the first call that needs a result)"
fi
for name in rust pytorch; do
  printf '  %-8s %s\n' "$name" "$(sed -n 's/^profile: //p' "$logs/$name.log" | tail -n1)"
done
echo "full logs: ${logs#"$repo"/}/rust.log, ${logs#"$repo"/}/pytorch.log"
