#!/bin/sh
# make test in two phases (docs/testing.md, "What runs where"):
#   1. the tests marked `guests` (emulated kernels under qemu's TCG: one host CPU busy, nothing
#      measured on this machine) and after them the fuzzers in the background, while the
#      other CPU runs the lint, the type check and the other tests marked `beside`, which
#      measure nothing here (unit and engine tests, and the integration tests of bundles,
#      compare, scaling, HTTP and PostgreSQL: no bed, no browser);
#   2. then, alone on the machine, every other test: those that measure.
# The guests set phase 1's length (283-292 s against about 200 s for the rest, with the
# package's bytecode compiled at set-up; 318 s before): the lint and the beside tests run at
# a lower priority (nice 10), so that they take what the guests leave; measured, it did not
# shorten them (318 -> 317 s): the guests' time is their own.
# Nor did running the two-kernel guest beside the other two (phase 1 323 s, the beside tests
# 299 s instead of 159): phase 1 keeps both CPUs busy, so only less work shortens it, or work
# moved from the longer lane to the shorter: with one A/A of two boots fewer (2026-12-03),
# the guests' lane takes the fuzzers (about 100 s) from the lane beside it.
# Each phase's pytest prints its slowest durations, and scripts/host_pace.py the host's pace
# before and after them (a slower hour of the host from a slower suite); the exit code is the
# first failure's.
# Usage: scripts/test-lanes.sh VENV
set -u
VENV=$1
PY=$VENV/bin/python
tmp=$(mktemp -d /tmp/iowall-lanes.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { [ "$status" -ne 0 ] || status=$1; }
"$PY" scripts/host_pace.py "before phase 1"
t0=$(date +%s)

"$PY" -m pytest -q -rs --durations=15 --basetemp="$tmp/guests" -m "guests or fuzz" \
    tests/integration tests/fuzz >"$tmp/guests.log" 2>&1 &
guests=$!

low="nice -n 10"
$low "$VENV/bin/ruff" check src tests benchmarks || fail 1
$low "$VENV/bin/ruff" format --check src tests benchmarks scripts || fail 1
$low "$VENV/bin/mypy" || fail 1
$low "$VENV/bin/lint-imports" || fail 1
$low "$PY" -m pytest -q -rs --durations=15 --basetemp="$tmp/beside" -m "beside and not fuzz" tests || fail $?

wait "$guests"
rc=$?
echo "== the emulated guests, then the fuzzers (phase 1, in the background) =="
cat "$tmp/guests.log"
fail $rc
echo "== phase 1: $(( $(date +%s) - t0 )) s =="
"$PY" scripts/host_pace.py "before phase 2"

"$PY" -m pytest -q -rs --durations=40 --basetemp="$tmp/measuring" -m "not guests and not beside" tests \
    || fail $?
echo "== both phases: $(( $(date +%s) - t0 )) s =="
"$PY" scripts/host_pace.py "after phase 2"
exit $status
