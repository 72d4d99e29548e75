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

# xtask's parser of cargo test output (the one `cargo xtask progress` uses) checks the
# promise and prints the summary line, or every test that breaks it.
if ! nice cargo xtask check-student-log "$work/test.log"; then
  [ $keep = 1 ] || echo "(run scripts/check-student-edition.sh --keep to keep the edition and its test log)" >&2
  exit 1
fi
