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
#      build at .libtorch, and the build scripts write an rpath, so cargo build/run/test work in
#      a new shell with nothing exported.
#   3. With --book, also installs the pinned book tools (mdbook, mdbook-katex,
#      mdbook-mermaid) with cargo install.
set -euo pipefail

TORCH_VERSION=2.11.0
MDBOOK_VERSION=0.5.4
KATEX_VERSION=0.10.0
MERMAID_VERSION=0.17.1

# Tested on Linux x86-64, with and without an NVIDIA GPU. On other systems the
# wheel's libtorch and the linker flags in the build scripts differ; stop before any download.
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "setup: this course is set up and tested on Linux x86-64 only; this is $(uname -s) $(uname -m)" >&2
     exit 1 ;;
esac

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${RUST_TRANSFORMER_CACHE:-${HOME:-/root}/.cache/rust-transformer-course}
venv=$cache/venv-torch-$TORCH_VERSION

want_book=0
for arg in "$@"; do
  case $arg in
    --book) want_book=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# What the steps below need, checked first so that a missing piece is one line here,
# not an error from pip or from a C++ build minutes later.
missing=()
command -v cargo >/dev/null || missing+=("Rust's cargo (https://rustup.rs)")
command -v c++ >/dev/null || command -v g++ >/dev/null ||
  missing+=("a C++ compiler, for tch's and the course's C++ (Debian/Ubuntu: build-essential)")
have_torch() {
  [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import torch, safetensors, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$TORCH_VERSION' else 1)" 2>/dev/null
}
if ! have_torch; then # Python is needed only to download libtorch
  if ! command -v python3 >/dev/null; then
    missing+=("Python 3, to download libtorch (Debian/Ubuntu: python3)")
  elif ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    missing+=("Python's venv module (Debian/Ubuntu: python3-venv)")
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: missing:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

if have_torch; then
  echo "setup: torch $TORCH_VERSION already in $venv"
else
  mkdir -p "$cache"
  free_kb=$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')
  if [ "${free_kb:-0}" -lt $((5 * 1024 * 1024)) ]; then
    echo "setup: $cache has $((free_kb / 1024 / 1024)) GB free; the download needs about 5 GB" >&2
    exit 1
  fi
  echo "setup: installing torch==$TORCH_VERSION into $venv (about 3 GB to download, 5 GB on disk, a few minutes)"
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
  cargo_home=${CARGO_HOME:-$HOME/.cargo}
  has_version() { # binary version
    command -v "$1" >/dev/null && "$1" --version 2>/dev/null | grep -q "$2"
  }

  if has_version mdbook "$MDBOOK_VERSION"; then
    echo "setup: mdbook $MDBOOK_VERSION already installed"
  else
    echo "setup: cargo install mdbook@$MDBOOK_VERSION (compiles from source; several minutes on 2 cores)"
    cargo install --locked --quiet "mdbook@$MDBOOK_VERSION"
  fi

  # The two preprocessors are built from their published source and Cargo.lock with one
  # change: the mdbook-preprocessor crate is moved to exactly $MDBOOK_VERSION. Their own
  # lock files pin older ones (mdbook-katex 0.10.0: 0.5.3, mdbook-mermaid 0.17.1: 0.5.0),
  # and a preprocessor built against another mdbook version than the running mdbook
  # prints a warning on every build of the book.
  install_preprocessor() { # crate version
    local work src
    echo "setup: cargo install $1@$2 against mdbook $MDBOOK_VERSION (compiles from source; several minutes on 2 cores)"
    work=$(mktemp -d)
    mkdir -p "$work/fetch/src"
    printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n%s = "=%s"\n' "$1" "$2" >"$work/fetch/Cargo.toml"
    : >"$work/fetch/src/lib.rs"
    (cd "$work/fetch" && cargo fetch --quiet) # unpacks the crate's source into the registry
    src=$(find "$cargo_home"/registry/src -mindepth 2 -maxdepth 2 -type d -name "$1-$2" | head -n1)
    cp -r "$src" "$work/src"
    (cd "$work/src" && cargo update --quiet -p mdbook-preprocessor --precise "$MDBOOK_VERSION")
    cargo install --locked --quiet --force --path "$work/src"
    rm -rf "$work"
  }

  # True when a build with both preprocessors prints no version-mismatch warning.
  preprocessors_match() {
    local probe log
    probe=$(mktemp -d)
    mkdir "$probe/src"
    printf '[book]\ntitle = "probe"\n\n[preprocessor.katex]\n\n[preprocessor.mermaid]\n' >"$probe/book.toml"
    printf '# Summary\n\n- [Probe](probe.md)\n' >"$probe/src/SUMMARY.md"
    # shellcheck disable=SC2016 # $x$ is math for mdbook-katex, not a shell variable
    printf '# Probe\n\n$x$\n\n```mermaid\ngraph LR\n  a --> b\n```\n' >"$probe/src/probe.md"
    log=$(mdbook build "$probe" 2>&1) || true
    rm -rf "$probe"
    ! grep -q "built against" <<<"$log"
  }

  for tool in "mdbook-katex $KATEX_VERSION" "mdbook-mermaid $MERMAID_VERSION"; do
    read -r name version <<<"$tool"
    if has_version "$name" "$version"; then
      echo "setup: $name $version already installed"
    else
      install_preprocessor "$name" "$version"
    fi
  done
  if ! preprocessors_match; then
    # Installed earlier from their own lock files: rebuild them against this mdbook.
    install_preprocessor mdbook-katex "$KATEX_VERSION"
    install_preprocessor mdbook-mermaid "$MERMAID_VERSION"
    preprocessors_match || echo "setup: warning: mdbook-katex or mdbook-mermaid still reports another mdbook version" >&2
  fi
fi
echo "setup: done"
