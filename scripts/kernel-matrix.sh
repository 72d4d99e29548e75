#!/usr/bin/env bash
# The kernel matrix: the tests whose verdict rests on training, run under every CPU
# kernel path this machine can imitate, with how far each trained number stands from
# its threshold.
#
# libtorch picks its vectorised kernels (ATEN_CPU_CAPABILITY) and MKL its matrix
# products (MKL_ENABLE_INSTRUCTIONS) from the CPU, once per process. They add in
# different orders, and training turns a last-bit difference into another model, so
# a trained-result test that passes on one path only fails on a student's laptop.
# Forcing the variables lets one x86 machine stand in for the others.
#
#   scripts/kernel-matrix.sh                  trained tests, every cell, seed 0
#   scripts/kernel-matrix.sh --seeds 0,1,2    ... and two more draws of data and weights
#   scripts/kernel-matrix.sh --all            every exercise and chapter test, not only
#                                             the trained ones (slow: minutes a cell)
#   options: --aten LIST (default,avx2,avx512)  --mkl LIST (SSE4_2,AVX2,native)
#            --threads LIST (1,2)  --out DIR (default target/kernel-matrix)
#
# Cells the CPU cannot run (avx512 without AVX-512) are named and skipped. The
# exercise tests pin libtorch to one thread (exercises/tests/common), so for them the
# threads column changes nothing; the chapter tests run on the threads given.
# The table goes to stdout and DIR/table.txt; the raw reports to DIR/reports.tsv.
# Exit status: 0 when every test passed in every cell, 1 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

aten_list=default,avx2,avx512
mkl_list=SSE4_2,AVX2,native
threads_list=1,2
seeds=0
all=0
out=target/kernel-matrix
while [ $# -gt 0 ]; do
  case $1 in
    --aten) aten_list=$2; shift ;;
    --mkl) mkl_list=$2; shift ;;
    --threads) threads_list=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    --all) all=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "kernel-matrix: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
for list in "$aten_list" "$mkl_list" "$threads_list" "$seeds"; do
  [[ $list =~ ^[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*$ ]] ||
    { echo "kernel-matrix: '$list' is not a comma-separated list" >&2; exit 2; }
done
[[ $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] ||
  { echo "kernel-matrix: --seeds takes whole numbers, e.g. 0,1,2" >&2; exit 2; }
[[ $threads_list =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  { echo "kernel-matrix: --threads takes counts from 1, e.g. 1,2" >&2; exit 2; }

if [ "$(uname -m)" != x86_64 ]; then
  echo "kernel-matrix: the two variables choose among x86 kernels; this is $(uname -m)," \
    "where libtorch has one path: run plain 'cargo test' instead" >&2
  exit 2
fi
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')

# What each value needs from the CPU: libtorch's AVX-512 kernels need the F, BW, VL
# and DQ extensions, its AVX2 ones AVX2 and FMA.
can_aten() {
  case $1 in
    default) return 0 ;;
    avx2) has avx2 && has fma ;;
    avx512) has avx512f && has avx512bw && has avx512vl && has avx512dq ;;
    *) echo "kernel-matrix: ATen path '$1' is not default, avx2 or avx512" >&2; exit 2 ;;
  esac
}
can_mkl() {
  case $1 in
    native|SSE4_2) return 0 ;;
    AVX2) has avx2 ;;
    AVX512) has avx512f ;;
    *) echo "kernel-matrix: MKL path '$1' is not SSE4_2, AVX2, AVX512 or native" >&2; exit 2 ;;
  esac
}
cells=() skipped=()
IFS=, read -ra atens <<<"$aten_list"
IFS=, read -ra mkls <<<"$mkl_list"
IFS=, read -ra threads <<<"$threads_list"
IFS=, read -ra seed_arr <<<"$seeds"
for a in "${atens[@]}"; do
  for m in "${mkls[@]}"; do
    if ! can_aten "$a" || ! can_mkl "$m"; then
      skipped+=("$a+$m"); continue
    fi
    for t in "${threads[@]}"; do cells+=("$a $m $t"); done
  done
done
[ ${#cells[@]} -gt 0 ] || { echo "kernel-matrix: no cell this CPU can run" >&2; exit 2; }

# The tests whose verdict rests on a trained number: each reports it through
# workbench::kernels::report. BINARY:FILTER (the filter keeps a binary's other tests
# out, and a model shared by several tests is trained once).
trained=(
  exercises_ch05:ex05_decoder_only_lm_reverses_sequences_it_never_saw
  exercises_ch09:ex09_unseen_length_
  exercises_ch11:ex11_find_a_head_check_
  training:a_few_hundred_steps_start_learning_the_reversal
)

echo "kernel-matrix: building the test binaries (debug, as cargo test does) …" >&2
mkdir -p "$out"
cargo test --workspace --no-run --message-format=json 2>/dev/null >"$out/build.json"
binary() { # the newest executable of test target $1
  grep -o "\"executable\":\"[^\"]*/deps/$1-[0-9a-f]*\"" "$out/build.json" |
    sed 's/"executable":"//; s/"$//' | tail -1
}
runs=()
if [ $all = 1 ]; then
  for name in $(grep -o '"executable":"[^"]*/deps/[a-z0-9_]*-[0-9a-f]*"' "$out/build.json" |
    sed 's/.*\/deps\///; s/-[0-9a-f]*"$//' | sort -u); do
    case $name in exercises_ch*|ablation|checkpoint|data|dates|engine|evaluation|fused_adam|memory|\
      model_invariance|model_structure|module_layers|precision|tch_pitfalls|tch_primer|training|\
      viz_and_sdpa|parity_pytorch|explorer_parity|cuda_graph) runs+=("$name:") ;;
    esac
  done
else
  runs=("${trained[@]}")
fi
for r in "${runs[@]}"; do
  [ -n "$(binary "${r%%:*}")" ] || { echo "kernel-matrix: no test binary ${r%%:*}" >&2; exit 1; }
done

reports=$out/reports.tsv failures=$out/failures.tsv
: >"$reports"; : >"$failures"
started=$(date +%s)
n=0 total=$(( ${#cells[@]} * ${#seed_arr[@]} ))
for cell in "${cells[@]}"; do
  read -r a m t <<<"$cell"
  for s in "${seed_arr[@]}"; do
    n=$((n + 1))
    printf 'kernel-matrix: cell %d of %d: ATen %s, MKL %s, %s thread(s), seed offset %s\n' \
      "$n" "$total" "$a" "$m" "$t" "$s" >&2
    for r in "${runs[@]}"; do
      # The exercise tests pin one libtorch thread: another count is the same run.
      [[ $r == exercises_* && $t != "${threads[0]}" ]] && continue
      bin=$(binary "${r%%:*}") filter=${r#*:}
      log=$out/last.log
      env_mkl=()
      [ "$m" = native ] || env_mkl=(MKL_ENABLE_INSTRUCTIONS="$m")
      set +e
      env ATEN_CPU_CAPABILITY="$a" "${env_mkl[@]}" OMP_NUM_THREADS="$t" MKL_NUM_THREADS="$t" \
        COURSE_TEST_SEED="$s" \
        "$bin" ${filter:+"$filter"} --nocapture >"$log" 2>&1
      status=$?
      set -e
      # The ATen path each report ran on, against the one forced: an ignored
      # variable would make a cell a copy of the native one.
      { grep -a "^kernel-matrix	" "$log" || true; } | cut -f2- | awk -F'\t' -v c="$a $m $t" -v want="$a" '
        { if (toupper($3) != toupper(want)) { print "kernel-matrix: asked ATen " want \
            ", the test ran on " $3 > "/dev/stderr"; bad = 1 }
          print c "\t" $1 "\t" $2 "\t" $4 "\t" $5 "\t" $6 "\t" $7 }
        END { exit bad }' >>"$reports" ||
        printf '%s\t%s\t%s\t%s\n' "$a $m $t" "$s" "${r%%:*}" "(ATen path not the one forced)" >>"$failures"
      grep -a -o '^test [^ ]* \.\.\. FAILED' "$log" | awk -v c="$a $m $t" -v s="$s" \
        -v b="${r%%:*}" '{ print c "\t" s "\t" b "\t" $2 }' >>"$failures" || true
      if [ $status -ne 0 ] && ! grep -qa '\.\.\. FAILED' "$log"; then
        printf '%s\t%s\t%s\t%s\n' "$a $m $t" "$s" "${r%%:*}" "(exit $status, no test named)" >>"$failures"
      fi
      if ! grep -qa '^test result: ' "$log"; then
        echo "kernel-matrix: ${r%%:*} printed no test result (log: $log)" >&2
      fi
    done
  done
done
elapsed=$(( $(date +%s) - started ))

{
  echo "kernel matrix · $cpu · libtorch 2.11.0 · $(date -u +%Y-%m-%d) · $elapsed s"
  echo "cells (ATen MKL threads): ${#cells[@]}; seed offsets: ${seeds//,/ }"
  if [ ${#skipped[@]} -gt 0 ]; then
    echo "cells this CPU cannot run: ${skipped[*]}"
  fi
  echo
  # One block per trained number: its bound, then the value in each cell and seed,
  # then the lowest margin and where it was.
  sort -t$'\t' -k2,2 -k4,4 -k1,1 -k3,3n "$reports" | awk -F'\t' -v seeds="$seeds" '
    BEGIN { ns = split(seeds, S, ",") }
    {
      key = $2 "\t" $4; cell = $1; v[key, cell, $3] = $5; bound[key] = $6
      if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
      if (!((key, cell) in cseen)) { cseen[key, cell] = 1; cells[key, ++nc[key]] = cell }
      if (!(key in low) || $7 + 0 < low[key] + 0) { low[key] = $7; at[key] = cell ", seed " $3; lowv[key] = $5 }
    }
    END {
      for (i = 1; i <= nk; i++) {
        k = keys[i]; split(k, p, "\t")
        printf "%s\n  %s, must be %s\n", p[1], p[2], bound[k]
        printf "  %-22s", "ATen MKL threads"
        for (j = 1; j <= ns; j++) printf "  seed %-4s", S[j]
        printf "\n"
        for (c = 1; c <= nc[k]; c++) {
          printf "  %-22s", cells[k, c]
          for (j = 1; j <= ns; j++) {
            x = ((k, cells[k, c], S[j]) in v) ? sprintf("%.4g", v[k, cells[k, c], S[j]]) : "-"
            printf "  %-9s", x
          }
          printf "\n"
        }
        printf "  lowest margin: %.4g (value %.4g, at %s)\n\n", low[k], lowv[k], at[k]
      }
    }'
  if [ -s "$failures" ]; then
    echo "FAILED:"
    sort -u "$failures" | awk -F'\t' '{ printf "  %s, seed %s: %s %s\n", $1, $2, $3, $4 }'
  else
    echo "every test passed in every cell"
  fi
} | tee "$out/table.txt"
[ ! -s "$failures" ]
