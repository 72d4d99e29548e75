#!/usr/bin/env bash
# Regenerates the program outputs that the book embeds: runs every chapter binary and
# writes what it printed (stdout and stderr) to book/src/outputs/<name>.txt.
#
# Each file starts with two lines the book shows above the output:
#   $ cargo run --release --bin 06_transformer            <- the command that made it
#   # device: cpu (AMD EPYC, 2 threads) · libtorch 2.11.0 · 2025-01-31 UTC ·   <- where
#   #   scripts/regen-outputs.sh
# then a blank line, then the output. Each of the two wraps to the book's 85 columns
# (scripts/fit-output.py): the command with shell continuations, so it can still be
# pasted, the device line at its ' · ' separators onto '#   ' lines; a line the program
# prints wider than that is broken with a visible marker (↩ at the end, ↪ on the next
# line). Figures are written by the binaries themselves,
# into book/src/figures/ (their default is the ignored out/ folder: a reader's run
# never touches the book).
#
# Usage: scripts/regen-outputs.sh [--no-build] [--cpu | --cuda] [--only NAME]... [--list]
#   --no-build   do not run `cargo build --release --bins` first (also implied when
#                there is no cargo on PATH)
#   --cpu        only the CPU runs          (default: the CPU runs, then the CUDA runs
#   --cuda       only the CUDA runs          when nvidia-smi shows a GPU)
#   --only NAME  regenerate only output NAME (a name from the table below, e.g.
#                06_transformer or 09_train_reverse_framework-default); repeatable
#   --list       print the table of runs (as filtered by --cpu/--cuda) and exit
#
# Two sets of outputs: CPU runs (every chapter; what a reader on a laptop reproduces)
# and CUDA runs (chapters 09-12 and the two scripts, names ending in _cuda, with their
# checkpoints in checkpoints/cuda/ and plots in book/src/figures/cuda/). The CPU runs are
# started with CUDA hidden (CUDA_VISIBLE_DEVICES=""), so on a GPU machine they stay CPU
# runs although their commands say --device auto.
#
# On a machine with libtorch 2.11 but without cargo (a GPU box, say): copy the prebuilt
# binaries from target/release/ of a machine that built them, point BIN_DIR at them and
# LD_LIBRARY_PATH at that machine's libtorch lib/ folder (for the PyPI wheel:
# .../site-packages/torch/lib), then run from a checkout of this repository:
#   BIN_DIR=/tmp/course-bins LD_LIBRARY_PATH=/path/to/torch/lib PYTHON=python3 scripts/regen-outputs.sh --cuda
# The binaries' built-in rpath names the build machine's libtorch; LD_LIBRARY_PATH is
# searched before it, so the local libtorch is the one that gets loaded.
# scripts/regen-cuda.sh does exactly this, finding torch's lib/ folder by itself.
set -euo pipefail

# ---------------------------------------------------------------------------------------
# The runs, in book order: output name, binary, arguments passed after `--`.
# One run per line; a line starting with # is skipped. Add a chapter by adding a line.
RUNS='
# output name (book/src/outputs/NAME.txt)  binary              arguments
01_embedding                               01_embedding        --out-dir book/src/figures
02_attention                               02_attention
03_feed_forward                            03_feed_forward
04_encoder                                 04_encoder
05_decoder                                 05_decoder
06_transformer                             06_transformer      --out-dir book/src/figures
07_mask_tests                              07_mask_tests
08_reverse_data                            08_reverse_data
# The slow learner first: the main run draws its history beside its own.
09_train_reverse_framework-default         09_train_reverse    --init framework-default --out checkpoints/framework-default.safetensors
09_train_reverse                           09_train_reverse    --compare checkpoints/framework-default.history.tsv --plot book/src/figures/09_init_ablation.svg --loss-plot book/src/figures/09_loss_per_step.svg --schedule-plot book/src/figures/09_lr_schedule.svg
# The checkpoint just trained, in fp16, for the attention explorer page (explorer.md).
export_explorer                            export_explorer     --checkpoint checkpoints/reverse_transformer.safetensors --out book/src/explorer/weights.js
# The same recipe with bf16 autocast on the CPU (engineering notes).
09_train_reverse_bf16                      09_train_reverse    --precision bf16 --out checkpoints/bf16.safetensors
12_sdpa_bench                              12_sdpa_bench       --plot book/src/figures/12_sdpa_sweep.svg
# The same recipe on a second CPU type (chapter 10, "What you will see on your machine"):
# chapters 09-11 again, on an AMD CPU, with their checkpoints in checkpoints/amd/ and their
# figures in the ignored out/amd/. Rows ending in _amd run only on an AMD CPU, as _cuda
# rows run only with a GPU: anywhere else they would be one more run of the machine the
# book already shows (about 15 minutes on two cores).
09_train_reverse_framework-default_amd     09_train_reverse    --init framework-default --out checkpoints/amd/framework-default.safetensors
09_train_reverse_amd                       09_train_reverse    --out checkpoints/amd/reverse.safetensors
10_greedy_decode_amd                       10_greedy_decode    --checkpoint checkpoints/amd/reverse.safetensors --out-dir out/amd
11_cross_attention_amd                     11_cross_attention  --checkpoint checkpoints/amd/reverse.safetensors --ablation checkpoints/amd/framework-default.safetensors --out-dir out/amd
# A third CPU, an AMD EPYC with AVX-512, on which the same command trains a model unlike
# both the Intel one and the AVX2 EPYC one above. Chapters 10 and 11 decode and dissect
# this model (their programs changed after their Intel runs, and no Intel machine is at
# hand), so these rows write the figures of those chapters into the book. Rows ending in
# _amd512 run only on an AMD CPU with AVX-512, rows ending in _amd only on one without
# it, so neither machine overwrites a run of the other (about 15 minutes on two cores).
09_train_reverse_framework-default_amd512  09_train_reverse    --init framework-default --out checkpoints/amd512/framework-default.safetensors
09_train_reverse_amd512                    09_train_reverse    --out checkpoints/amd512/reverse.safetensors
10_greedy_decode_trace_amd512              10_greedy_decode    --checkpoint checkpoints/amd512/reverse.safetensors --trace 7 3 0 9 5
10_greedy_decode_amd512                    10_greedy_decode    --checkpoint checkpoints/amd512/reverse.safetensors --out-dir book/src/figures
11_cross_attention_amd512                  11_cross_attention  --checkpoint checkpoints/amd512/reverse.safetensors --ablation checkpoints/amd512/framework-default.safetensors --out-dir book/src/figures
# Chapter 14, a second task: the run of the chapter (about 6 minutes on two cores), then the
# same recipe on three seeds, for the interval across seeds (about 18 minutes).
14_dates                                   14_dates            --out-dir book/src/figures
dates_seeds                                scripts/dates-seeds.sh
# Not a chapter: the explanatory pictures of chapters 02-12 (scripts/figures.rs).
figures                                    figures             --out-dir book/src/figures
# Not a chapter: the study of the page "What each piece buys" (scripts/ablation.rs):
# 16 variants x 3 seeds of the chapter 09 recipe, two runs at a time (under an hour on
# two CPU cores).
ablation                                   ablation            --out-dir book/src/figures
# The rows chapter 13 draws conclusions from, on ten seeds, so that a test across seeds
# can reach p < 0.01 after a Holm correction (40 runs, about 45 minutes on two cores).
ablation_seeds                             ablation            --seeds 10 --only learned-position --only post-norm-no-warmup --out-dir out/ablation-seeds
# The confirmation of the one claim chapter 13 makes about the recipe, fixed before
# it ran: the learned position table against the model of the course on seeds 10-19,
# which no earlier study trained (20 runs, about 11 minutes on two cores).
ablation_fresh_seeds                       ablation            --seeds 10 --first-seed 10 --only learned-position --out-dir out/ablation-fresh
# The exercise experiments of the answer key, from the exercise solutions (also run by
# scripts/exercise-experiments.sh; about 55 minutes in all on two CPU cores).
exercise_masks                             scripts/exercise-experiments.sh  --run masks
exercise_kv_cache                          scripts/exercise-experiments.sh  --run kv-cache
exercise_copy_task                         scripts/exercise-experiments.sh  --run copy-task
exercise_norms                             scripts/exercise-experiments.sh  --run norms
exercise_post_norm                         scripts/exercise-experiments.sh  --run post-norm
exercise_unseen_length                     scripts/exercise-experiments.sh  --run unseen-length
exercise_find_a_head                       scripts/exercise-experiments.sh  --run find-a-head
exercise_dates                             scripts/exercise-experiments.sh  --run dates
# Counted from the book and the exercises, no program run: the page for instructors.
course_plan                                scripts/course-plan.sh
# Scripts instead of binaries. The benchmark needs .venv (PyTorch), so it is skipped where
# there is none, e.g. on a GPU machine without this set-up. The seed spread trains five
# models (about 15 minutes on two CPU cores).
bench_vs_pytorch                           scripts/bench-vs-pytorch.sh  --no-build
seed_spread                                scripts/seed-spread.sh
# The same seeds on one thread: a proxy for another machine (chapter 10).
seed_spread_1thread                        scripts/seed-spread.sh  --threads 1
# The default recipe on the plainest CPU kernels, as on a CPU without AVX (chapter 10,
# "Imitating another CPU"). A binary column of `env` forces variables: the arguments
# start with the assignments, then name the binary.
09_train_reverse_plain_kernels             env  ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 09_train_reverse --out checkpoints/plain-kernels.safetensors
# CUDA runs: bf16 autocast and TF32, on the GPU. The sweep of chapter 12 goes on until
# the hand-written path runs out of memory (or to L = 32768).
09_train_reverse_framework-default_cuda    09_train_reverse    --device cuda --init framework-default --out checkpoints/cuda/framework-default.safetensors
09_train_reverse_cuda                      09_train_reverse    --device cuda --out checkpoints/cuda/reverse.safetensors --compare checkpoints/cuda/framework-default.history.tsv --plot book/src/figures/cuda/09_init_ablation.svg --loss-plot book/src/figures/cuda/09_loss_per_step.svg
10_greedy_decode_cuda                      10_greedy_decode    --device cuda --checkpoint checkpoints/cuda/reverse.safetensors --out-dir book/src/figures/cuda
11_cross_attention_cuda                    11_cross_attention  --device cuda --checkpoint checkpoints/cuda/reverse.safetensors --ablation checkpoints/cuda/framework-default.safetensors --out-dir book/src/figures/cuda
12_sdpa_bench_cuda                         12_sdpa_bench       --device cuda --sweep-max 32768 --plot book/src/figures/cuda/12_sdpa_sweep.svg
bench_vs_pytorch_cuda                      scripts/bench-vs-pytorch.sh  --no-build --device cuda --steps 300 --rounds 2
seed_spread_cuda                           scripts/seed-spread.sh  --device cuda
'
# ---------------------------------------------------------------------------------------

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out_dir=book/src/outputs
bin_dir=${BIN_DIR:-target/release}

build=1
list=0
set_filter=all
only=()
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=0 ;;
    --only) [ $# -ge 2 ] || { echo "regen-outputs: --only needs a name" >&2; exit 2; }
            only+=("$2"); shift ;;
    --only=*) only+=("${1#--only=}") ;;
    --list) list=1 ;;
    --cpu) set_filter=cpu ;;
    --cuda) set_filter=cuda ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
    *) echo "regen-outputs: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# Is there a GPU? (nvidia-smi, which needs no libtorch.)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)
if [ "$set_filter" = all ] && [ ${#only[@]} -eq 0 ] && [ -z "$gpu" ] && [ "$list" = 0 ]; then
  echo "regen-outputs: no GPU here, so only the CPU runs (the _cuda rows need one)" >&2
  set_filter=cpu
fi

is_cuda_row() { [[ $1 == *_cuda ]]; }
is_amd_row() { [[ $1 == *_amd ]]; }
is_amd512_row() { [[ $1 == *_amd512 ]]; }
# A row whose binary column is `env`: its arguments are VAR=value words, then the
# binary and its own arguments. Sets bin, args and assigns (the VAR=value words).
unpack_env_row() {
  local words
  read -ra words <<<"$args"
  assigns=()
  while [ ${#words[@]} -gt 0 ] && [[ ${words[0]} == *=* ]]; do
    assigns+=("${words[0]}")
    words=("${words[@]:1}")
  done
  [ ${#words[@]} -gt 0 ] || { echo "regen-outputs: row $name sets variables but names no binary" >&2; exit 2; }
  bin=${words[0]}
  args=${words[*]:1}
}

# The active rows of the table, as "name<TAB>binary<TAB>args".
rows=()
while read -r name bin args; do
  case $name in ''|'#'*) continue ;; esac
  [ -n "$bin" ] || { echo "regen-outputs: table row '$name' names no binary" >&2; exit 2; }
  if [ ${#only[@]} -eq 0 ]; then
    if is_cuda_row "$name"; then [ "$set_filter" = cpu ] && continue
    else [ "$set_filter" = cuda ] && continue; fi
  fi
  rows+=("$name"$'\t'"$bin"$'\t'"$args")
done <<<"$RUNS"

if [ "$list" = 1 ]; then
  printf '%s\n' "${rows[@]}" | awk -F '\t' '{ printf "%-40s %-28s %s\n", $1, $2, $3 }'
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

# The binary a row runs: its own, or for a script the one the script runs (which also
# names the libtorch in the header).
binary_of() {
  case $1 in
    scripts/bench-vs-pytorch.sh) echo bench_train ;;
    scripts/exercise-experiments.sh) echo exercise_experiments ;;
    scripts/dates-seeds.sh) echo 14_dates ;;
    scripts/*) echo 09_train_reverse ;;
    *) echo "$1" ;;
  esac
}

# Build once, unless told not to or there is nothing to build with.
if [ "$build" = 1 ] && [ -z "${BIN_DIR:-}" ] && command -v cargo >/dev/null; then
  if [ ${#only[@]} -eq 0 ]; then
    targets=(--bins)
  else
    targets=()
    for row in "${selected[@]}"; do
      IFS=$'\t' read -r name bin args <<<"$row"
      [ "$bin" != env ] || unpack_env_row
      targets+=(--bin "$(binary_of "$bin")")
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
# Two CPUs that both call themselves "AMD EPYC" trained different models (chapter 10);
# the header names the widest vector unit, which tells those two apart.
avx512=0
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then avx512=1; fi
threads=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
vector=AVX2
[ "$avx512" = 1 ] && vector=AVX-512
grep -qw avx2 /proc/cpuinfo 2>/dev/null || [ "$avx512" = 1 ] || vector="no AVX2"
cpu_label="$cpu_model, $vector, $threads threads"
cpu_device="cpu ($cpu_label)"
gpu_device="cuda ($gpu; host $cpu_label)"
device_of() { if is_cuda_row "$1"; then echo "$gpu_device"; else echo "$cpu_device"; fi; }

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

# The header and every line the program printed, fitted to the book's 85 columns by
# scripts/fit-output.py (a long command continued as a shell would, the device line at
# its ' · ' separators, a wider program line broken with a visible ↩ / ↪ marker that
# `fit-output.py unwrap` undoes); `cargo xtask check-book` fails on any line over 90.
fit=(python3 "$repo/scripts/fit-output.py")

# --- Run -------------------------------------------------------------------------------
mkdir -p "$out_dir" book/src/figures
failed=()
for row in "${selected[@]}"; do
  IFS=$'\t' read -r name bin args <<<"$row"
  assigns=()
  [ "$bin" != env ] || unpack_env_row
  exe=$bin_dir/$bin
  cmd="cargo run --release --bin $bin"
  [ -n "$args" ] && cmd="$cmd -- $args"
  [ ${#assigns[@]} -eq 0 ] || cmd="${assigns[*]} $cmd"
  device=$(device_of "$name")
  lt_exe=$exe
  if [[ $bin == scripts/* ]]; then
    exe=$repo/$bin
    cmd="$bin${args:+ $args}"
    lt_exe=$bin_dir/$(binary_of "$bin")
    if [ "$bin" = scripts/bench-vs-pytorch.sh ] && ! command -v "${PYTHON:-.venv/bin/python}" >/dev/null; then
      echo "regen-outputs: skipping $name: no Python with torch here (scripts/setup.sh, or set PYTHON)" >&2
      continue
    fi
  fi
  if is_cuda_row "$name" && [ -z "$gpu" ]; then
    echo "regen-outputs: skipping $name: no GPU here" >&2
    continue
  fi
  if is_amd_row "$name" && { [[ $cpu_model != *AMD* ]] || [ "$avx512" = 1 ]; }; then
    echo "regen-outputs: skipping $name: it is the AVX2 AMD CPU's run, and this CPU is not one" >&2
    continue
  fi
  if is_amd512_row "$name" && { [[ $cpu_model != *AMD* ]] || [ "$avx512" = 0 ]; }; then
    echo "regen-outputs: skipping $name: it is the AVX-512 AMD CPU's run, and this CPU is not one" >&2
    continue
  fi
  if [ ! -x "$exe" ]; then
    echo "regen-outputs: $exe not found; build it (cargo build --release --bin $bin) or set BIN_DIR" >&2
    failed+=("$name")
    continue
  fi
  echo "regen-outputs: $cmd  ->  $out_dir/$name.txt" >&2
  tmp=$(mktemp)
  status=0
  # CPU rows see no GPU, so that --device auto means the CPU on every machine.
  hide=()
  is_cuda_row "$name" || hide=(env CUDA_VISIBLE_DEVICES=)
  [ ${#assigns[@]} -eq 0 ] || hide=(env ${hide[@]+"${hide[@]:1}"} "${assigns[@]}")
  # shellcheck disable=SC2086 # the arguments are words from the table
  ${hide[@]+"${hide[@]}"} "$exe" $args >"$tmp" 2>&1 || status=$?
  {
    "${fit[@]}" header "$cmd" "# device: $device · $(libtorch_version "$lt_exe") · $today UTC · scripts/regen-outputs.sh"
    echo
    "${fit[@]}" body <"$tmp"
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
