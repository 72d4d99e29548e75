#!/usr/bin/env bash
# Makes the student edition of the course: a copy of this workspace in which every
# exercise solution is replaced by its hints and a todo!().
#
#   scripts/student-edition.sh DEST               copy the workspace to DEST (new or empty), blanked
#   scripts/student-edition.sh --no-answers DEST  the same, for a class: no solution anywhere
#   scripts/student-edition.sh --blank DIR        blank every .rs file under DIR in place (no copy)
#
# What is copied: the files git knows about -- tracked files as they are in the working
# tree (uncommitted edits included) and untracked files that .gitignore does not exclude.
# Ignored paths (target/, checkpoints/, .venv, .libtorch) are not copied; .venv and
# .libtorch are recreated in DEST as symlinks to the same targets as here, so the copy
# builds against this machine's libtorch without downloading anything.
#
# What is changed: in exercises/src/*.rs, each region
#     // ANCHOR: exNN_name
#     // HINT: ...          <- the HINT lines right after the marker are kept
#     ...solution...        <- replaced by: todo!("exercise exNN_name: see the book, chapter NN")
#     // ANCHOR_END: exNN_name
# The markers stay, so the regions can still be found by name. The default edition, for
# a learner working alone, keeps the solutions, untouched, in exercises/solutions/
# (compiled by no crate, listed in the copy's .gitignore), and the book's answer key
# includes them from there. The --no-answers edition, for a class, keeps no solution:
# no exercises/solutions/, no exercises/mutants/, the answer key replaced by a short
# note, and the experiment outputs only the answer key showed left out. DEST is no git
# repository, so no solution hides in git objects either. Its book still builds and
# `cargo xtask progress` works as in the other edition.
# Nothing else is touched but the answer key, a note atop README.md and .gitignore:
# either edition builds, its chapter binaries run, and exactly the tests in
# exercises/tests/exercises_chNN.rs fail until the exercises are done.
#
# The work is done by `cargo xtask student-edition` (xtask/src/student.rs).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in
  -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
  "") sed -n '2,32p' "$0" >&2; exit 2 ;;
  --blank)
    [ $# -eq 2 ] && [ -d "$2" ] || { echo "student-edition.sh: --blank needs one existing directory" >&2; exit 2; }
    dir=$(cd "$2" && pwd)
    cd "$repo" && exec cargo xtask blank "$dir" ;;
  --no-answers)
    [ $# -eq 2 ] || { echo "student-edition.sh: --no-answers needs one DEST" >&2; exit 2; }
    mkdir -p "$2"
    dest=$(cd "$2" && pwd)
    cd "$repo" && exec cargo xtask student-edition --no-answers "$dest" ;;
  -*) echo "student-edition.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac
[ $# -eq 1 ] || { sed -n '2,32p' "$0" >&2; exit 2; }
mkdir -p "$1"
dest=$(cd "$1" && pwd)
cd "$repo" && exec cargo xtask student-edition "$dest"
