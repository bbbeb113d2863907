#!/bin/sh
# make test in two phases (docs/testing.md, "What runs where"):
#   1. the tests marked `guests` (emulated kernels under qemu's TCG: one host CPU busy, nothing
#      measured on this machine) and after them the fuzzers in the background, while the
#      other CPU runs the lint, the type check and the other tests marked `beside`, which
#      measure nothing here (unit and engine tests, and the integration tests of bundles,
#      compare, scaling, HTTP and PostgreSQL: no bed, no browser);
#   2. then, alone on the machine, every other test: those that measure.
# Phase 1 keeps both CPUs busy, so only less work shortens it, or work moved from the longer
# lane to the shorter: the lint and the beside tests run at a lower priority (nice 10), to take
# what the guests leave (measured, it did not shorten the guests: their time is their own), and
# the guests' lane also takes the fuzzers (115-120 s), so that both lanes end together (on
# 2026-12-03: 466 s and 446 s, 523 s and 488 s; docs/testing.md).
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
