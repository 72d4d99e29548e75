#!/usr/bin/env bash
# Tests the attention explorer (book/src/explorer.md) in a real browser: builds the
# book, opens the page in headless Chromium from the built files (file://) and from
# `mdbook serve`, and goes through it as a reader would (scripts/explorer-browser-test.mjs
# lists the checks): 7 3 0 9 5 must come out as 5 9 0 3 7 with the anti-diagonal,
# switching cross-attention off must break it, a checkpoint must load, the same
# file picked again after it changed must be read again, damaged and crafted files
# (and one without its file checksum) must be refused with load_checkpoint's
# sentences, a theme switch must keep what the reader did, every
# text must pass WCAG AA contrast in all five themes, every control must be named
# and reachable with Tab, and the page must fit a phone. It also holds the page to
# issue 43: no output or map of the last model under a new model's name, the last
# of two overlapping picks wins, clicks and taps read the cell under them, arrow
# keys on the explorer's buttons leave the book's page alone, a pending decode is
# marked, and a 160 MB checkpoint (made in the work folder, not kept) loads with
# progress while typing, with no task over 200 ms on the page's thread.
# Prints how long a full greedy decode with all maps takes in the page, and writes
# the explorer page's screenshots, book/src/figures/explorer_*.png, and more to
# look at (a dark theme, a phone's width, a map read with the keyboard).
#
# Usage: scripts/explorer-browser-test.sh [--no-build] [--shots DIR] [--looks DIR] [--checkpoint FILE]
#   --no-build         use the existing book/build
#   --shots DIR        where the book's screenshots go (default book/src/figures)
#   --looks DIR        where the others go (default /tmp/explorer-looks)
#   --checkpoint FILE  the checkpoint to load through the page's file picker
#                      (default checkpoints/reverse_transformer.safetensors when it
#                      exists, else the shipped weights written out as one)
#
# Needs mdbook (scripts/setup.sh --book), Node 20, and Debian's chromium and
# chromium-driver, installed with apt-get when missing and running as root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=1
shots=book/src/figures
looks=/tmp/explorer-looks
checkpoint=checkpoints/reverse_transformer.safetensors
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=0 ;;
    --shots) shots=$2; shift ;;
    --looks) looks=$2; shift ;;
    --checkpoint) checkpoint=$2; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "explorer-browser-test: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

command -v node >/dev/null || { echo "explorer-browser-test: no node (Node 20 is needed)" >&2; exit 1; }
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "explorer-browser-test: installing chromium and chromium-driver (apt-get)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "explorer-browser-test: needs chromium and chromedriver (Debian: apt-get install chromium chromium-driver)" >&2
    exit 1
  fi
fi

if [ "$build" = 1 ]; then
  mdbook build book
fi
[ -f book/build/explorer.html ] || { echo "explorer-browser-test: book/build/explorer.html missing" >&2; exit 1; }

work=$(mktemp -d)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
pids=()
# shellcheck disable=SC2317 # called through the trap
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_for() { # URL: until it answers, or 30 s
  for _ in $(seq 150); do
    python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "explorer-browser-test: $1 did not answer" >&2
  return 1
}

driver_port=$(free_port)
chromedriver --port="$driver_port" >"$work/chromedriver.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$driver_port/status"

# mdbook serve watches book/src and rebuilds into book/build: the screenshots go to
# the work folder first and are copied into the book only after it has stopped.
serve_port=$(free_port)
mdbook serve book -n 127.0.0.1 -p "$serve_port" >"$work/serve.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
wait_for "http://127.0.0.1:$serve_port/explorer.html"

mkdir -p "$work/shots" "$looks"
status=0
node scripts/explorer-browser-test.mjs \
  --driver "http://127.0.0.1:$driver_port" --chrome "$(command -v chromium)" \
  --url "file://$repo/book/build/explorer.html" \
  --url "http://127.0.0.1:$serve_port/explorer.html" \
  --shots "$work/shots" --looks "$looks" --work "$work" --checkpoint "$checkpoint" || status=$?

kill "$serve_pid" 2>/dev/null || true
wait "$serve_pid" 2>/dev/null || true
# A failed run does not overwrite the book's screenshots; its own are kept aside to look at.
[ "$status" = 0 ] || shots=/tmp/explorer-shots-failed
mkdir -p "$shots"
for f in "$work"/shots/*.png; do
  [ -e "$f" ] || continue
  cp "$f" "$shots/"
  echo "explorer-browser-test: wrote $shots/$(basename "$f")"
done
exit "$status"
