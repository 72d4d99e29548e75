#!/usr/bin/env bash
# Regenerates the book's CUDA outputs (the _cuda rows of scripts/regen-outputs.sh) on a
# GPU machine that has PyTorch 2.11 but no cargo, from release binaries built elsewhere.
#
# On the machine with cargo:
#   cargo build --release --bins
#   mkdir -p /tmp/course-bins
#   cp target/release/[0-9][0-9]_* target/release/bench_train /tmp/course-bins/
#   (skip the .d files; bench_train is the benchmark row's Rust side)
# copy /tmp/course-bins and a checkout of this repository to the GPU machine, and there:
#   scripts/regen-cuda.sh /tmp/course-bins [--pack FILE] [--only NAME]...
# then bring back book/src/outputs/*_cuda.txt and book/src/figures/cuda/ (or FILE, a tar
# of exactly those) and commit them.
#
#   --pack FILE  after every run, (re)write FILE, a tar of the CUDA outputs made so far,
#                so that a session cut short still keeps what finished
#   --only NAME  only these rows (repeatable; names from regen-outputs.sh --list --cuda)
#
# Without --only it runs the CUDA rows whose output a page of the book includes. The
# others (seed_spread_cuda: five trainings) run only when named with --only. Rough
# times on an H200, eager training: 09 (two runs) 2-3 min, 10 and 11 under a minute
# together, 12's sweep to L = 32768 1-2 min, the benchmark 2-3 min.
#
# It finds torch's lib/ folder through PYTHON (default python3), puts it on
# LD_LIBRARY_PATH so the binaries load that libtorch instead of the one their rpath
# names, and checks that the versions agree before running anything.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

bin_dir=${1:?usage: scripts/regen-cuda.sh BIN_DIR [--pack FILE] [--only NAME]...}
shift
bin_dir=$(cd "$bin_dir" && pwd)
pack=""
only=()
while [ $# -gt 0 ]; do
  case $1 in
    --pack) pack=${2:?--pack needs a file}; shift 2 ;;
    --only) only+=("${2:?--only needs a name}"); shift 2 ;;
    *) echo "regen-cuda: unknown option '$1'" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
case $torch_version in
  2.11.0*) ;;
  *) echo "regen-cuda: this torch is $torch_version; the binaries were built against libtorch 2.11.0" >&2; exit 1 ;;
esac
export BIN_DIR=$bin_dir PYTHON=$python LD_LIBRARY_PATH=$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "regen-cuda: torch $torch_version from $torch_lib" >&2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 || {
  echo "regen-cuda: nvidia-smi sees no GPU" >&2; exit 1; }
if missing=$(ldd "$bin_dir/09_train_reverse" | grep 'not found'); then
  echo "regen-cuda: 09_train_reverse cannot load its libraries:" >&2
  echo "$missing" >&2
  exit 1
fi

names=("${only[@]+"${only[@]}"}")
if [ ${#names[@]} -eq 0 ]; then
  list=$(scripts/regen-outputs.sh --list --cuda)
  while read -r name _; do
    if grep -rqF "outputs/$name.txt" book/src --include='*.md'; then
      names+=("$name")
    else
      echo "regen-cuda: leaving out $name (no page shows it; --only $name runs it)" >&2
    fi
  done <<<"$list"
fi
[ ${#names[@]} -gt 0 ] || { echo "regen-cuda: no CUDA rows to run" >&2; exit 1; }

pack_outputs() {
  [ -n "$pack" ] || return 0
  local files=()
  mapfile -t files < <(ls book/src/outputs/*_cuda.txt 2>/dev/null; [ -d book/src/figures/cuda ] && echo book/src/figures/cuda)
  [ ${#files[@]} -gt 0 ] && tar -cf "$pack.tmp" "${files[@]}" && mv "$pack.tmp" "$pack"
  return 0
}

failed=()
for name in "${names[@]}"; do
  start=$SECONDS
  scripts/regen-outputs.sh --no-build --only "$name" || failed+=("$name")
  echo "regen-cuda: $name took $((SECONDS - start)) s" >&2
  pack_outputs
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "regen-cuda: FAILED: ${failed[*]} (their outputs end with the exit status)" >&2
  exit 1
fi
