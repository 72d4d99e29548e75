#!/usr/bin/env bash
# Regenerates the program outputs that the book embeds: runs every chapter binary and
# writes what it printed (stdout and stderr) to book/src/outputs/<name>.txt.
#
# Each file starts with two lines the book shows above the output:
#   $ cargo run --release --bin 06_transformer            <- the command that made it
#   # device: cpu (AMD EPYC, 2 threads) · libtorch 2.11.0 · 2025-01-31 UTC · scripts/regen-outputs.sh
# then a blank line, then the output. Plots are written by the binaries themselves,
# into book/src/figures/.
#
# Usage: scripts/regen-outputs.sh [--no-build] [--only NAME]... [--list]
#   --no-build   do not run `cargo build --release --bins` first (also implied when
#                there is no cargo on PATH)
#   --only NAME  regenerate only output NAME (a name from the table below, e.g.
#                06_transformer or 09_train_reverse_framework-default); repeatable
#   --list       print the table of runs and exit
#
# On a machine with libtorch 2.11 but without cargo (a GPU box, say): copy the prebuilt
# binaries from target/release/ of a machine that built them, point BIN_DIR at them and
# LD_LIBRARY_PATH at that machine's libtorch lib/ folder (for the PyPI wheel:
# .../site-packages/torch/lib), then run from a checkout of this repository:
#   BIN_DIR=/tmp/course-bins LD_LIBRARY_PATH=/path/to/torch/lib scripts/regen-outputs.sh
# The binaries' built-in rpath names the build machine's libtorch; LD_LIBRARY_PATH is
# searched before it, so the local libtorch is the one that gets loaded.
set -euo pipefail

# ---------------------------------------------------------------------------------------
# The runs, in book order: output name, binary, arguments passed after `--`.
# One run per line; a line starting with # is skipped. Add a chapter by adding a line.
RUNS='
# output name (book/src/outputs/NAME.txt)  binary              arguments
01_embedding                               01_embedding
02_attention                               02_attention
03_feed_forward                            03_feed_forward
04_encoder                                 04_encoder
05_decoder                                 05_decoder
06_transformer                             06_transformer
07_mask_tests                              07_mask_tests
08_reverse_data                            08_reverse_data
# The slow learner first: the main run draws its history beside its own.
09_train_reverse_framework-default         09_train_reverse    --init framework-default --out checkpoints/framework-default.safetensors
09_train_reverse                           09_train_reverse    --compare checkpoints/framework-default.history.tsv --plot book/src/figures/09_init_ablation.svg
10_greedy_decode                           10_greedy_decode
10_greedy_decode_trace                     10_greedy_decode    --trace 7 3 0 9 5
11_cross_attention                         11_cross_attention
12_sdpa_bench                              12_sdpa_bench
# Scripts instead of binaries. The benchmark needs .venv (PyTorch), so it is skipped where
# there is none, e.g. on a GPU machine without this set-up. The seed spread trains five
# models (about 15 minutes on two CPU cores).
bench_vs_pytorch                           scripts/bench-vs-pytorch.sh  --no-build
seed_spread                                scripts/seed-spread.sh
'
# ---------------------------------------------------------------------------------------

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out_dir=book/src/outputs
bin_dir=${BIN_DIR:-target/release}

build=1
list=0
only=()
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=0 ;;
    --only) [ $# -ge 2 ] || { echo "regen-outputs: --only needs a name" >&2; exit 2; }
            only+=("$2"); shift ;;
    --only=*) only+=("${1#--only=}") ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "regen-outputs: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# The active rows of the table, as "name<TAB>binary<TAB>args".
rows=()
while read -r name bin args; do
  case $name in ''|'#'*) continue ;; esac
  [ -n "$bin" ] || { echo "regen-outputs: table row '$name' names no binary" >&2; exit 2; }
  rows+=("$name"$'\t'"$bin"$'\t'"$args")
done <<<"$RUNS"

if [ "$list" = 1 ]; then
  printf '%s\n' "${rows[@]}" | column -t -s $'\t'
  exit 0
fi

selected=()
for want in "${only[@]+"${only[@]}"}"; do
  found=0
  for row in "${rows[@]}"; do
    [ "${row%%$'\t'*}" = "$want" ] && { found=1; break; }
  done
  [ "$found" = 1 ] || { echo "regen-outputs: '$want' is not in the table (see --list)" >&2; exit 2; }
done
for row in "${rows[@]}"; do
  name=${row%%$'\t'*}
  if [ ${#only[@]} -eq 0 ]; then
    selected+=("$row")
  else
    for want in "${only[@]}"; do [ "$want" = "$name" ] && selected+=("$row"); done
  fi
done

# Build once, unless told not to or there is nothing to build with.
if [ "$build" = 1 ] && [ -z "${BIN_DIR:-}" ] && command -v cargo >/dev/null; then
  if [ ${#only[@]} -eq 0 ]; then
    targets=(--bins)
  else
    targets=()
    for row in "${selected[@]}"; do
      rest=${row#*$'\t'}
      b=${rest%%$'\t'*}
      case $b in scripts/*) b=09_train_reverse ;; esac
      targets+=(--bin "$b")
    done
  fi
  echo "regen-outputs: cargo build --release ${targets[*]}" >&2
  cargo build --release "${targets[@]}"
elif [ "$build" = 1 ] && [ -z "${BIN_DIR:-}" ]; then
  echo "regen-outputs: no cargo on PATH; using the binaries already in $bin_dir" >&2
fi

# --- The header line: device, libtorch version, date -----------------------------------
cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n1)
cpu_model=${cpu_model:-$(uname -m)}
threads=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
cpu_label="$cpu_model, $threads threads"
cpu_device="cpu ($cpu_label)"
gpu_device=$cpu_device
if gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1) && [ -n "$gpu" ]; then
  gpu_device="cuda ($gpu; host $cpu_label)"
fi
# Chapters 01-08 build their tensors on the CPU whatever the machine; 09-12 take
# --device auto and use the GPU when there is one.
device_of() {
  case $1 in
    09_*|10_*|11_*|12_*) echo "$gpu_device" ;;
    *) echo "$cpu_device" ;;
  esac
}

# The libtorch a binary really loads (LD_LIBRARY_PATH first, then its rpath), found with
# ldd; its version from the wheel's version.py or the C++ distribution's build-version.
libtorch_version() {
  local lib dir v=""
  lib=$(ldd "$1" 2>/dev/null | awk '$1 == "libtorch_cpu.so" { print $3; exit }')
  if [ -n "$lib" ] && [ -e "$lib" ]; then
    dir=$(cd "$(dirname "$lib")/.." && pwd)
    if [ -f "$dir/version.py" ]; then
      v=$(sed -n "s/^__version__ = '\([^'+]*\).*/\1/p" "$dir/version.py")
    elif [ -f "$dir/build-version" ]; then
      v=$(cut -d+ -f1 "$dir/build-version")
    fi
  fi
  echo "libtorch ${v:-(version unknown)}"
}
today=$(date -u +%Y-%m-%d)

# --- Run -------------------------------------------------------------------------------
mkdir -p "$out_dir" book/src/figures
failed=()
for row in "${selected[@]}"; do
  IFS=$'\t' read -r name bin args <<<"$row"
  exe=$bin_dir/$bin
  cmd="cargo run --release --bin $bin"
  [ -n "$args" ] && cmd="$cmd -- $args"
  device=$(device_of "$bin")
  lt_exe=$exe
  if [[ $bin == scripts/* ]]; then
    exe=$repo/$bin
    cmd="$bin${args:+ $args}"
    device=$cpu_device
    [ "$bin" = scripts/seed-spread.sh ] && device=$gpu_device
    lt_exe=$bin_dir/09_train_reverse
    if [ "$bin" = scripts/bench-vs-pytorch.sh ] && [ ! -x .venv/bin/python ]; then
      echo "regen-outputs: skipping $name: no .venv here (scripts/setup.sh)" >&2
      continue
    fi
  fi
  if [ ! -x "$exe" ]; then
    echo "regen-outputs: $exe not found; build it (cargo build --release --bin $bin) or set BIN_DIR" >&2
    failed+=("$name")
    continue
  fi
  echo "regen-outputs: $cmd  ->  $out_dir/$name.txt" >&2
  tmp=$(mktemp)
  status=0
  # shellcheck disable=SC2086 # the arguments are words from the table
  "$exe" $args >"$tmp" 2>&1 || status=$?
  {
    echo "\$ $cmd"
    echo "# device: $device · $(libtorch_version "$lt_exe") · $today UTC · scripts/regen-outputs.sh"
    echo
    cat "$tmp"
    [ "$status" = 0 ] || echo "[exit status $status]"
  } >"$out_dir/$name.txt"
  rm -f "$tmp"
  if [ "$status" != 0 ]; then
    echo "regen-outputs: $name exited with status $status (output kept in $out_dir/$name.txt)" >&2
    failed+=("$name")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "regen-outputs: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "regen-outputs: wrote ${#selected[@]} file(s) to $out_dir" >&2
