#!/usr/bin/env bash
# Makes the student edition of the course: a copy of this workspace in which every
# exercise solution is replaced by its hints and a todo!().
#
#   scripts/student-edition.sh DEST          copy the workspace to DEST (new or empty), blanked
#   scripts/student-edition.sh --blank DIR   blank every .rs file under DIR in place (no copy)
#
# What is copied: the files git knows about -- tracked files as they are in the working
# tree (uncommitted edits included) and untracked files that .gitignore does not exclude.
# Ignored paths (target/, checkpoints/, .venv, .libtorch) are not copied; .venv and
# .libtorch are recreated in DEST as symlinks to the same targets as here, so the copy
# builds against this machine's libtorch without downloading anything.
#
# What is changed: in src/exercises/**/*.rs, each region
#     // ANCHOR: exNN_name
#     // HINT: ...          <- the HINT lines right after the marker are kept
#     ...solution...        <- replaced by: todo!("exercise exNN_name: see the book, chapter NN")
#     // ANCHOR_END: exNN_name
# The markers stay, so the book's {{#include ...:exNN_name}} still finds the regions.
# Nothing else is touched: the student edition builds, its chapter binaries run, and
# exactly the tests in tests/exercises_chNN.rs fail until the exercises are done.
set -euo pipefail

usage() { sed -n '2,22p' "$0"; }

# blank_file FILE: the transformation, in place. Fails on an unterminated region.
blank_file() {
  perl -i -ne '
    BEGIN { $state = 0 }
    if ($state == 0) {
      if (/^(\s*)\/\/ ANCHOR: (ex(\d\d)_\w+)\s*$/) { ($indent, $name, $ch) = ($1, $2, $3); $state = 1 }
      print; next;
    }
    if ($state == 1) {
      if (/^\s*\/\/ HINT:/) { print; next }
      print "${indent}todo!(\"exercise $name: see the book, chapter $ch\")\n";
      $state = 2;
    }
    if (/^\s*\/\/ ANCHOR_END: \Q$name\E\s*$/) { print; $state = 0 }
    END { die "unterminated exercise region $name in $ARGV\n" if $state != 0 }
  ' "$1"
}

blank_dir() {
  local dir=$1 count=0
  while IFS= read -r -d '' f; do
    blank_file "$f"
    count=$((count + $(grep -c 'todo!("exercise ex' "$f" || true)))
  done < <(find "$dir" -name '*.rs' -type f -print0 | sort -z)
  echo "$count"
}

case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
  --blank)
    [ $# -eq 2 ] && [ -d "$2" ] || { echo "student-edition.sh: --blank needs one existing directory" >&2; exit 2; }
    n=$(blank_dir "$2")
    echo "blanked $n exercise regions under $2"
    exit 0 ;;
  -*) echo "student-edition.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac
[ $# -eq 1 ] || { usage >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=$1
if [ -e "$dest" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
  echo "student-edition.sh: $dest exists and is not empty" >&2
  exit 1
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
case $dest/ in "$repo"/*) echo "student-edition.sh: DEST must lie outside the repository" >&2; exit 1 ;; esac

# The file list: tracked (as in the working tree) plus untracked-but-not-ignored,
# minus tracked files deleted from the working tree.
( cd "$repo" && git ls-files -z --cached --others --exclude-standard ) |
  ( cd "$repo" && while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done ) |
  sort -zu |
  tar -C "$repo" --null -T - -cf - |
  tar -C "$dest" -xmf -   # -m: fresh mtimes, so cargo never takes an old build of the copy for current

# The same libtorch and Python environment as here (both are gitignored symlinks).
for link in .libtorch .venv; do
  if [ -L "$repo/$link" ]; then
    ln -sfn "$(readlink -f "$repo/$link")" "$dest/$link"
  elif [ -e "$repo/$link" ]; then
    echo "student-edition.sh: warning: $link is not a symlink here; run scripts/setup.sh in $dest" >&2
  fi
done
# .cargo/config.toml is tracked and copied above; make sure of it (it points tch at .libtorch).
if [ -f "$repo/.cargo/config.toml" ] && [ ! -f "$dest/.cargo/config.toml" ]; then
  mkdir -p "$dest/.cargo" && cp "$repo/.cargo/config.toml" "$dest/.cargo/config.toml"
fi

[ -d "$dest/src/exercises" ] || { echo "student-edition.sh: no src/exercises in the copy" >&2; exit 1; }
n=$(blank_dir "$dest/src/exercises")
echo "student edition in $dest: $n exercise solutions replaced by todo!()"
echo "next: cd $dest && cargo test --test exercises_ch01"
