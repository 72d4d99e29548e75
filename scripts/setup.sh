#!/usr/bin/env bash
# One-time set-up for the course. Safe to run again: when everything is in place it
# only checks and returns in a second or two.
#
# What it does:
#   1. Gets libtorch 2.11.0 from PyPI's torch==2.11.0 wheel, in a virtual environment
#      kept *outside* the clone (default ~/.cache/rust-transformer-course), so a second
#      clone on the same machine -- CI's fresh checkout, say -- reuses it instead of
#      downloading 3 GB again.
#   2. Links it into the clone as .venv and .libtorch; .cargo/config.toml points tch's
#      build at .libtorch, and build.rs writes an rpath, so cargo build/run/test work in
#      a new shell with nothing exported.
#   3. With --book, also installs the pinned book tools (mdbook, mdbook-katex,
#      mdbook-mermaid) with cargo install.
set -euo pipefail

TORCH_VERSION=2.11.0
MDBOOK_VERSION=0.5.4
KATEX_VERSION=0.10.0
MERMAID_VERSION=0.17.1

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${RUST_TRANSFORMER_CACHE:-$HOME/.cache/rust-transformer-course}
venv=$cache/venv-torch-$TORCH_VERSION

want_book=0
for arg in "$@"; do
  case $arg in
    --book) want_book=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

have_torch() {
  [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import torch, safetensors, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$TORCH_VERSION' else 1)" 2>/dev/null
}

if have_torch; then
  echo "setup: torch $TORCH_VERSION already in $venv"
else
  echo "setup: installing torch==$TORCH_VERSION into $venv (about 3 GB, a few minutes)"
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" safetensors numpy
  have_torch || { echo "setup: torch $TORCH_VERSION did not import after install" >&2; exit 1; }
fi

torch_dir=$("$venv/bin/python" -c "import torch, os; print(os.path.dirname(torch.__file__))")
ln -sfn "$venv" "$repo/.venv"
ln -sfn "$torch_dir" "$repo/.libtorch"
echo "setup: .libtorch -> $torch_dir"

if [ "$want_book" = 1 ]; then
  install_tool() { # crate version binary
    if command -v "$3" >/dev/null && "$3" --version 2>/dev/null | grep -q "${2%%-*}"; then
      echo "setup: $1 $2 already installed"
    else
      echo "setup: cargo install $1@$2 (compiles from source; several minutes on 2 cores)"
      cargo install --locked --quiet "$1@$2"
    fi
  }
  install_tool mdbook "$MDBOOK_VERSION" mdbook
  install_tool mdbook-katex "$KATEX_VERSION" mdbook-katex
  install_tool mdbook-mermaid "$MERMAID_VERSION" mdbook-mermaid
fi
echo "setup: done"
