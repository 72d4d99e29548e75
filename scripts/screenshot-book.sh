#!/usr/bin/env bash
# Builds the book, serves book/build on localhost and takes a screenshot of each page
# with headless Chromium, to see what a reader sees: rendered math, drawn mermaid
# diagrams, program outputs.
#
# Usage: scripts/screenshot-book.sh [--out DIR] [--height PX] [--no-build] [--allow-warnings] [PAGE...]
#   PAGE             a page of the built book, e.g. 02_attention.html (default: a set
#                    covering math, diagrams and outputs; see DEFAULT_PAGES below),
#                    or a section of one, PAGE#HEADING-ID, e.g.
#                    11_cross_attention.html#the-trained-model: the shot then starts at
#                    that heading instead of the top of the page
#   --out DIR        where the PNGs go (default /tmp/book-shots), one per page
#   --height PX      window height, i.e. how much of each page is captured (default
#                    2000; the width is 1280)
#   --no-build       screenshot the existing book/build
#   --allow-warnings do not stop when `mdbook build` prints a warning
#
# Needs mdbook with mdbook-katex and mdbook-mermaid (scripts/setup.sh --book), python3
# for the local web server, and Chromium (installed with apt-get when missing and
# running as root). The build is also checked for pages that load anything from another
# host: the book must work offline.
set -euo pipefail

DEFAULT_PAGES=(introduction.html 01_embedding.html 02_attention.html 06_transformer.html 07_mask_tests.html pitfalls.html summary.html)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out=/tmp/book-shots
height=2000
build=1
allow_warnings=0
pages=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift ;;
    --out=*) out=${1#--out=} ;;
    --height) height=$2; shift ;;
    --height=*) height=${1#--height=} ;;
    --no-build) build=0 ;;
    --allow-warnings) allow_warnings=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "screenshot-book: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) pages+=("$1") ;;
  esac
  shift
done
[ ${#pages[@]} -gt 0 ] || pages=("${DEFAULT_PAGES[@]}")

# --- Build -----------------------------------------------------------------------------
if [ "$build" = 1 ]; then
  command -v mdbook >/dev/null || { echo "screenshot-book: no mdbook; run scripts/setup.sh --book" >&2; exit 1; }
  log=$(mktemp)
  if ! mdbook build book >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"
    echo "screenshot-book: mdbook build failed" >&2; exit 1
  fi
  cat "$log" >&2
  if grep -qiE 'warn|error' "$log" && [ "$allow_warnings" = 0 ]; then
    rm -f "$log"
    echo "screenshot-book: mdbook build printed warnings (see above); fix them or pass --allow-warnings" >&2
    exit 1
  fi
  rm -f "$log"
fi
[ -f book/build/index.html ] || { echo "screenshot-book: book/build/index.html missing; build first" >&2; exit 1; }

# Nothing may come from another host: no CDN stylesheet, script or font.
if grep -lE '<(link|script)[^>]+(href|src)="(https?:)?//' book/build/*.html >/dev/null 2>&1; then
  echo "screenshot-book: these pages load resources from another host:" >&2
  grep -lE '<(link|script)[^>]+(href|src)="(https?:)?//' book/build/*.html >&2
  exit 1
fi

# --- Chromium --------------------------------------------------------------------------
chrome=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null; then chrome=$c; break; fi
done
if [ -z "$chrome" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "screenshot-book: installing chromium (apt-get)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    chrome=chromium
  else
    echo "screenshot-book: no chromium; install it (Debian: apt-get install chromium)" >&2
    exit 1
  fi
fi

# --- Serve -----------------------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
server_log=$(mktemp)
python3 -m http.server "$port" --bind 127.0.0.1 --directory book/build >"$server_log" 2>&1 &
server_pid=$!
profiles=()
# shellcheck disable=SC2317 # called through the trap
cleanup() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -f "$server_log" "book/build/$frame"
  for p in "${profiles[@]+"${profiles[@]}"}"; do rm -rf "$p"; done
}
# A section's screenshot goes through a small frame page that scrolls the real page to
# the heading once it has loaded (headless Chromium does not scroll to a #fragment
# before it takes the picture). It lives in book/build only while this script runs.
frame=.screenshot-frame.html
cat >"book/build/$frame" <<'HTML'
<!doctype html><html><body style="margin:0">
<iframe id="f" style="width:100vw;height:100vh;border:0"></iframe>
<script>
const q = new URLSearchParams(location.search), f = document.getElementById("f");
f.onload = () => {
  const w = f.contentWindow, el = w.document.getElementById(q.get("id"));
  if (el) w.scrollTo(0, el.getBoundingClientRect().top + w.scrollY - 10);
};
f.src = q.get("page");
</script></body></html>
HTML
trap cleanup EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/index.html', timeout=1)" 2>/dev/null && break
  sleep 0.2
done

# --- Shoot -----------------------------------------------------------------------------
mkdir -p "$out"
status=0
for page in "${pages[@]}"; do
  file=${page%%#*}
  section=""
  [[ $page == *#* ]] && section=${page#*#}
  if [ ! -f "book/build/$file" ]; then
    echo "screenshot-book: book/build/$file does not exist" >&2
    status=1
    continue
  fi
  png=$out/$(basename "${file%.html}")${section:+-$section}.png
  url="http://127.0.0.1:$port/$file"
  [ -n "$section" ] && url="http://127.0.0.1:$port/$frame?page=$file&id=$section"
  profile=$(mktemp -d)
  profiles+=("$profile")
  # --virtual-time-budget lets the page's scripts (mermaid draws its diagrams in the
  # browser) finish before the picture is taken.
  timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$profile" --window-size=1280,"$height" \
    --virtual-time-budget=5000 --screenshot="$png" "$url" \
    >/dev/null 2>&1 || true
  if [ -s "$png" ]; then
    echo "screenshot-book: $page -> $png"
  else
    echo "screenshot-book: no screenshot of $page" >&2
    status=1
  fi
done
exit "$status"
