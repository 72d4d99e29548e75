#!/usr/bin/env bash
# Training speed of the Rust model (tch on libtorch) against the PyTorch twin in
# scripts/torch_reference.py, on this machine, one after the other.
#
# Both run the reversal-task recipe of chapter 09 (batch 64, d=128, 2+2 layers,
# dropout 0.1, Adam with the warmup schedule) on the same libtorch version, take 5
# untimed warm-up steps, then time N optimizer steps with T intra-op threads: on the CPU
# in float32 unless a row says bf16, with --device cuda in bf16 autocast with TF32.
# Each row compares a configuration with its like on the other side:
#
#   eager  Rust with tch's Adam           vs PyTorch's default Adam (a for-loop over the
#                                            variables on the CPU, foreach kernels on CUDA)
#   fused  Rust with at::_fused_adam_     vs PyTorch Adam(fused=True)
#   bf16   (CPU) fused Adam, bf16 autocast on both sides
#   graph  (CUDA) the whole step as one CUDA graph on both sides (Rust --cuda-graph,
#          PyTorch torch.cuda.graph); also compared with PyTorch eager (row eager)
#
# Usage: scripts/bench-vs-pytorch.sh [--steps N] [--threads T] [--rounds R] [--device D]
#                                    [--rows LIST] [--no-build]
#   --rounds R    alternate the two sides R times and compare medians (env BENCH_ROUNDS, default 3)
#   --steps N     timed optimizer steps per run                      (env BENCH_STEPS,   default 200)
#   --threads T   libtorch intra-op threads for both                 (env BENCH_THREADS, default nproc)
#   --device D    cpu (default) or cuda
#   --rows LIST   comma-separated rows from the table above (default: every row of the device:
#                 eager,fused,bf16 on the CPU; eager,fused,graph on CUDA)
#   --no-build    use the bench_train binary as it is
# Environment: PYTHON (default .venv/bin/python, from scripts/setup.sh) is the Python with
# torch; BIN_DIR (default target/release) holds bench_train (scripts/bench_train.rs);
# BENCH_SETTLE=0 skips the wait for a quiet CPU. On a GPU machine without
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
rows_arg=""
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
    --rows) rows_arg=${2:?--rows needs a list}; shift 2 ;;
    --rows=*) rows_arg=${1#*=}; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "bench-vs-pytorch.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case $device in cpu|cuda) ;; *) echo "bench-vs-pytorch.sh: --device must be cpu or cuda, not '$device'" >&2; exit 2 ;; esac
for v in "$steps" "$threads" "$rounds"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench-vs-pytorch.sh: '$v' is not a positive integer" >&2; exit 2; }
done

# ---- the rows: name, Rust flags, PyTorch flags, what the PyTorch side is
rust_flags() {
  case $1 in
    eager) echo "--optimizer tch" ;;
    fused) echo "--optimizer fused" ;;
    bf16) echo "--optimizer fused --precision bf16" ;;
    graph) echo "--cuda-graph" ;;
  esac
}
torch_flags() {
  case $1 in
    eager) echo "" ;;
    fused) echo "--fused" ;;
    bf16) echo "--fused --precision bf16" ;;
    graph) echo "--cuda-graph" ;;
  esac
}
describe() {
  case $1 in
    eager) echo "tch's Adam vs PyTorch's default Adam" ;;
    fused) echo "at::_fused_adam_ vs Adam(fused=True)" ;;
    bf16) echo "fused Adam + bf16 autocast on both sides" ;;
    graph) echo "the step as one CUDA graph on both sides" ;;
  esac
}
if [ -z "$rows_arg" ]; then
  if [ "$device" = cpu ]; then rows_arg=eager,fused,bf16; else rows_arg=eager,fused,graph; fi
fi
IFS=, read -r -a rows <<<"$rows_arg"
[ ${#rows[@]} -gt 0 ] || { echo "bench-vs-pytorch.sh: --rows is empty" >&2; exit 2; }
for row in "${rows[@]}"; do
  case $row:$device in
    eager:*|fused:*|bf16:cpu|graph:cuda) ;;
    bf16:cuda) echo "bench-vs-pytorch.sh: row bf16 is the CPU's (on CUDA every row is bf16 already)" >&2; exit 2 ;;
    graph:cpu) echo "bench-vs-pytorch.sh: row graph needs --device cuda (CUDA graphs)" >&2; exit 2 ;;
    *) echo "bench-vs-pytorch.sh: unknown row '$row' (eager, fused, bf16, graph)" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-$repo/.venv/bin/python}
command -v "$python" >/dev/null || { echo "bench-vs-pytorch.sh: $python not found; run scripts/setup.sh first (or set PYTHON)" >&2; exit 1; }
bin_dir=${BIN_DIR:-$repo/target/release}
bin=$bin_dir/bench_train
logs=$repo/target/bench-vs-pytorch
mkdir -p "$logs"

# ---- the machine
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n1)
cpu=${cpu:-unknown CPU}
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
torch_dir=$("$python" -c 'import os, torch; print(os.path.realpath(os.path.dirname(torch.__file__)))')
# Which libtorch the Rust binary loads: LD_LIBRARY_PATH first, else its rpath
# (.libtorch, the torch wheel of scripts/setup.sh).
if [ -n "${LD_LIBRARY_PATH:-}" ]; then
  libtorch_dir=$(readlink -f "${LD_LIBRARY_PATH%%:*}" 2>/dev/null || echo "${LD_LIBRARY_PATH%%:*}")
else
  libtorch_dir=$(readlink -f "$repo/.libtorch" 2>/dev/null || echo "$repo/.libtorch")
fi
case $libtorch_dir in
  "$torch_dir"|"$torch_dir/lib") libtorch_dir="the same torch" ;;
esac
echo "== Rust (tch 0.24) vs PyTorch: training speed on the reversal task"
echo "date:      $(date '+%Y-%m-%d %H:%M:%S %Z')"
echo "machine:   $cpu, $(nproc) cores available ($(grep -c '^processor' /proc/cpuinfo) logical CPUs)"
echo "torch:     $torch_version for Python; libtorch for Rust: $libtorch_dir"
if [ "$device" = cuda ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)
  echo "gpu:       ${gpu:-unknown}"
  precision="CUDA, bf16 autocast + TF32"
else
  precision="CPU, float32 unless the row says bf16"
fi
echo "run:       $steps timed steps after 5 untimed, $threads thread(s), batch 64, $rounds rounds"
echo "precision: $precision"
echo "rows:"
for row in "${rows[@]}"; do
  printf '  %-6s %s\n' "$row" "$(describe "$row")"
  rust_cmd="bench_train $(rust_flags "$row")"
  torch_cmd="torch_reference.py train $(torch_flags "$row")"
  printf '  %-6s rust:    %s\n' "" "${rust_cmd% }"
  printf '  %-6s pytorch: %s\n' "" "${torch_cmd% }"
done
# Give the machine up to 90 s to settle after whatever ran before (the 1-minute load
# average decays slowly, so this waits for it to fall under 0.5, not for zero).
# (Only for the CPU: on CUDA the earlier runs' load average does not slow the GPU, and
# device time is the scarce thing there.)
[ "$device" = cpu ] && [ "${BENCH_SETTLE:-1}" != 0 ] && for _ in $(seq 18); do
  read -r load1 _ < /proc/loadavg
  awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }' || break
  sleep 5
done
read -r load1 _ < /proc/loadavg
echo "load:      $load1 (1-minute average before starting)"
# On the CPU every core computes, so any other job disturbs the run. On CUDA only the
# launching thread matters: warn when a quarter of the cores are busy.
busy=0.5
[ "$device" = cuda ] && busy=$(awk -v n="$(nproc)" 'BEGIN { print (n / 4 > 0.5 ? n / 4 : 0.5) }')
if awk -v l="$load1" -v b="$busy" 'BEGIN { exit !(l > b) }'; then
  echo "warning:   the machine is not idle; the timings below will be noisy" >&2
fi
echo

# ---- build
if [ "$build" = 1 ]; then
  echo "-- cargo build --release --bin bench_train"
  cargo build --release --bin bench_train
fi
[ -x "$bin" ] || { echo "bench-vs-pytorch.sh: $bin is missing (build it, or drop --no-build)" >&2; exit 1; }

# Runs a command, keeps its output in $logs/NAME.log, prints its bench: line;
# fails (after showing the end of the log) when the run fails or prints none.
bench_line() { # name command...
  local name=$1; shift
  local log=$logs/$name.log line
  echo "\$ $*" >"$log"
  if ! "$@" >>"$log" 2>&1; then
    echo "bench-vs-pytorch.sh: $name failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
  line=$(grep '^bench: ' "$log" | tail -n1 || true)
  if [ -z "$line" ]; then
    echo "bench-vs-pytorch.sh: $name printed no 'bench:' line; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
  echo "$line"
}

# ---- run, alternating, so that a slow patch of the machine hits both sides alike.
# A row whose run fails is dropped from the later rounds and the summary, so that
# one broken configuration does not cost the others' numbers (exit status 1).
declare -A lines # [row:side] -> newline-separated bench: lines, one per round
declare -A failed_rows=()
for ((r = 1; r <= rounds; r++)); do
  for row in "${rows[@]}"; do
    [ -n "${failed_rows[$row]:-}" ] && continue
    # shellcheck disable=SC2046 # the flags are words on purpose
    if line=$(bench_line "$row-rust" "$bin" --steps "$steps" --threads "$threads" --device "$device" $(rust_flags "$row")); then
      lines[$row:rust]+="$line"$'\n'
    else
      failed_rows[$row]=rust
      continue
    fi
    # shellcheck disable=SC2046
    if line=$(bench_line "$row-pytorch" "$python" scripts/torch_reference.py train --steps "$steps" \
      --threads "$threads" --device "$device" $(torch_flags "$row")); then
      lines[$row:pytorch]+="$line"$'\n'
    else
      failed_rows[$row]=pytorch
    fi
  done
done
ok_rows=()
for row in "${rows[@]}"; do
  [ -z "${failed_rows[$row]:-}" ] && ok_rows+=("$row")
done
[ ${#ok_rows[@]} -gt 0 ] || { echo "bench-vs-pytorch.sh: every row failed" >&2; exit 1; }
rows=("${ok_rows[@]}")

field() { # line key -> value of key=value
  sed -n "s/.*[[:space:]]$2=\([^[:space:]]*\).*/\1/p" <<<"$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fastest() { sort -g | head -n1; }
seconds_of() { # row side statistic -> that statistic of the rounds' seconds
  while IFS= read -r l; do
    if [ -n "$l" ]; then field "$l" seconds; fi
  done <<<"${lines[$1:$2]}" | "$3"
}
verdict() { # ratio -> words
  awk -v q="$1" 'BEGIN { print (q < 0.97 ? "below 1: Rust is faster" : (q > 1.03 ? "above 1: PyTorch is faster" : "within 3%: about the same")) }'
}

echo
printf '%-6s %-8s %6s %7s %8s %10s %9s\n' row impl round steps threads seconds steps/s
for row in "${rows[@]}"; do
  for side in rust pytorch; do
    r=0
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      r=$((r + 1))
      printf '%-6s %-8s %6s %7s %8s %10s %9s\n' "$row" "$(field "$line" impl)" "$r" "$(field "$line" steps)" \
        "$(field "$line" threads)" "$(field "$line" seconds)" "$(field "$line" steps_per_s)"
    done <<<"${lines[$row:$side]}"
  done
done

echo
echo "medians and ratios (Rust time / PyTorch time, like against like):"
declare -A med fast
for row in "${rows[@]}"; do
  for side in rust pytorch; do
    med[$row:$side]=$(seconds_of "$row" "$side" median)
    fast[$row:$side]=$(seconds_of "$row" "$side" fastest)
  done
  q=$(awk -v r="${med[$row:rust]}" -v p="${med[$row:pytorch]}" 'BEGIN { if (p <= 0) print "nan"; else printf "%.2f", r / p }')
  printf '  %-6s rust %8.3f s, pytorch %8.3f s: %s  (%s)\n' "$row" "${med[$row:rust]}" "${med[$row:pytorch]}" "$q" \
    "$( [ "$q" = nan ] && echo "no PyTorch time" || verdict "$q")"
done
# Other jobs on the machine only ever slow a run down, so the fastest round is the
# least disturbed one: a second opinion when the rounds spread widely.
echo "fastest rounds and their ratios:"
for row in "${rows[@]}"; do
  awk -v row="$row" -v r="${fast[$row:rust]}" -v p="${fast[$row:pytorch]}" \
    'BEGIN { printf "  %-6s rust %8.3f s, pytorch %8.3f s: %.2f\n", row, r, p, (p > 0 ? r / p : 0) }'
done
if [ -n "${med[fused:rust]:-}" ] && [ -n "${med[eager:pytorch]:-}" ]; then
  awk -v r="${med[fused:rust]}" -v p="${med[eager:pytorch]}" \
    'BEGIN { if (p > 0) printf "  fused Rust / PyTorch eager = %.2f (medians)\n", r / p }'
fi
if [ -n "${med[graph:rust]:-}" ] && [ -n "${med[eager:pytorch]:-}" ]; then
  awk -v r="${med[graph:rust]}" -v p="${med[eager:pytorch]}" \
    'BEGIN { if (p > 0) printf "  graphed Rust / PyTorch eager = %.2f (medians)\n", r / p }'
fi
if [ -n "${med[eager:rust]:-}" ] && [ ${#rows[@]} -gt 1 ]; then
  echo
  echo "within each side, against its own eager row (time / eager time):"
  for row in "${rows[@]}"; do
    [ "$row" = eager ] && continue
    awk -v row="$row" -v r="${med[$row:rust]}" -v re="${med[eager:rust]}" \
      -v p="${med[$row:pytorch]}" -v pe="${med[eager:pytorch]}" \
      'BEGIN { printf "  %-6s rust %.2f, pytorch %.2f\n", row, r / re, p / pe }'
  done
fi
echo
echo "where a step's time goes (ms per step, last round):"
if [ "$device" = cuda ]; then
  echo "  (on CUDA a call returns once its kernels are queued: the phases measure"
  echo "   the host's launching, and the wait for the GPU lands in read-back, the"
  echo "   first call that needs a result; a graphed step has no phases inside:"
  echo "   copy-in, one replay launch, read-back)"
fi
for row in "${rows[@]}"; do
  for side in rust pytorch; do
    # "forward+loss 24.90 ms (47%), backward ..." -> "fwd+loss 24.90, backward ... ms"
    phases=$(sed -n 's/^profile: //p' "$logs/$row-$side.log" | tail -n1 |
      sed -e 's/ ms ([0-9]*%)//g' -e 's/forward+loss/fwd+loss/' -e 's/optimizer/optim/')
    printf '  %-6s %-8s %s ms\n' "$row" "$side" "$phases"
  done
done
echo "full logs: ${logs#"$repo"/}/<row>-<rust|pytorch>.log"
if [ ${#failed_rows[@]} -gt 0 ]; then
  for row in "${!failed_rows[@]}"; do
    echo "FAILED: row $row (${failed_rows[$row]} side): see ${logs#"$repo"/}/$row-${failed_rows[$row]}.log"
  done
  exit 1
fi
