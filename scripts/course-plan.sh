#!/usr/bin/env bash
# Prints the planning figures of the book's page for instructors: per chapter the words
# and lines the book shows and the minutes to read them, per exercise the lines of its
# reference answer and the minutes to do it, by the rule of thumb printed above them.
# A wrapper of `cargo xtask plan` (xtask/src/plan.rs), so that scripts/regen-outputs.sh
# can write book/src/outputs/course_plan.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec cargo xtask plan
