#!/usr/bin/env bash
# Generates the student edition in a temporary directory, builds and tests it, and checks
# what the edition promises:
#   * everything compiles: `cargo build --bins` and every test target;
#   * every test in exercises/tests/exercises_chNN.rs fails, and fails at an exercise's todo!();
#   * every other test passes (ignored tests are allowed).
# Prints "student edition: N exercise tests fail as intended, M other tests pass" and
# exits 0, or lists what broke the promise and exits 1.
#
#   scripts/check-student-edition.sh [--keep]     --keep leaves the edition and its log behind
#
# The edition is built in its own target directory, target/student-edition/ (override
# with STUDENT_EDITION_TARGET_DIR), never in target/ itself: cargo names a package's
# artifacts by its path *relative to the workspace*, so the edition and this repository
# would overwrite each other's library, and cargo, judging freshness by mtimes, could
# then link the todo!() library into this repository's tests. The directory is kept
# between runs: the first run compiles the dependencies (torch-sys takes a few minutes),
# later ones only the package. LIBTORCH is set to this repository's .libtorch.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0
case ${1:-} in
  --keep) keep=1 ;;
  "") ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  *) echo "check-student-edition.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/student-edition.XXXXXX")
cleanup() { if [ $keep = 1 ]; then echo "kept: $work (log: $work/test.log)"; else rm -rf "$work"; fi; }
trap cleanup EXIT

"$repo/scripts/student-edition.sh" "$work/ws" >/dev/null
cd "$work/ws"
export CARGO_TARGET_DIR=${STUDENT_EDITION_TARGET_DIR:-$repo/target/student-edition}
# The value cargo derives from this repository's .cargo/config.toml, so that moving the
# temporary directory between runs does not invalidate the torch-sys build.
export LIBTORCH=${LIBTORCH:-$repo/.libtorch}
export RUST_BACKTRACE=0

fail() {
  echo "check-student-edition: $1" >&2
  [ -f "${2:-}" ] && tail -n 60 "$2" >&2
  exit 1
}

nice cargo build --bins >"$work/build.log" 2>&1 || fail "cargo build --bins fails in the student edition" "$work/build.log"
nice cargo test --no-run >"$work/build-tests.log" 2>&1 || fail "the tests of the student edition do not compile" "$work/build-tests.log"
nice cargo test --no-fail-fast >"$work/test.log" 2>&1 || true   # exercise tests fail by design
grep -q "could not compile" "$work/test.log" && fail "something did not compile during cargo test" "$work/test.log"

expected_bins=$(ls exercises/tests/exercises_ch[0-9][0-9].rs | wc -l)

# One pass over cargo's output: which binary each result line belongs to, and whether each
# failing exercise test panicked at a todo!("exercise exNN_...").
summary=$(awk -v expected_bins="$expected_bins" '
  function report(msg) { problems = problems "\n  " msg }
  /^     Running / {
    bin = $2; if (bin == "unittests") bin = bin " " $3
    ex = (bin ~ /exercises_ch[0-9][0-9]\.rs$/)
    if (ex) ex_bins++
    cur = ""; next
  }
  /^   Doc-tests / { bin = "doc-tests " $2; ex = 0; cur = ""; next }
  /^test .* \.\.\. (ok|FAILED|ignored)/ {
    line = $0; sub(/^test /, "", line)
    status = line; sub(/^.* \.\.\. /, "", status)
    name = line; sub(/ \.\.\. (ok|FAILED|ignored).*$/, "", name)
    if (status ~ /^ok/) {
      if (ex) report("passes, but is an exercise test: " bin " " name); else passed++
    } else if (status ~ /^FAILED/) {
      if (ex) { failed++; failing[bin " " name] = 1; per_bin[bin]++ } else report("fails: " bin " " name)
    } else ignored++
    next
  }
  /^---- .* stdout ----$/ { cur = $2; next }
  /not yet implemented: exercise ex[0-9][0-9]_/ { if (cur != "") at_todo[bin " " cur] = 1 }
  END {
    for (k in failing) if (!(k in at_todo)) report("fails, but not at an exercise todo!(): " k)
    if (ex_bins != expected_bins) report("ran " ex_bins " exercise test files, expected " expected_bins)
    printf "%d %d %d\n", failed, passed, ignored
    if (problems != "") printf "%s\n", problems > problems_file
  }
' problems_file="$work/problems.txt" "$work/test.log")
if [ -s "$work/problems.txt" ]; then
  echo "check-student-edition: the student edition does not behave as promised:$(cat "$work/problems.txt")" >&2
  [ $keep = 1 ] || echo "(run scripts/check-student-edition.sh --keep to keep the edition and its test log)" >&2
  exit 1
fi

read -r failed passed ignored <<<"$summary"
[ "$failed" -gt 0 ] || fail "no exercise test ran" "$work/test.log"
[ "$passed" -gt 0 ] || fail "no other test ran" "$work/test.log"
extra=""
[ "$ignored" -gt 0 ] && extra=" ($ignored ignored)"
echo "student edition: $failed exercise tests fail as intended, $passed other tests pass$extra"
