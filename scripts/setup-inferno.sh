#!/bin/sh
# Install the flame-graph tools (the inferno crate: inferno-collapse-perf, inferno-flamegraph,
# inferno-diff-folded) into the virtualenv's bin/, once. Needs cargo (rustc >= 1.71); without
# it, say so and go on: the profile probe and `iowall plot flame` then report themselves off.
set -eu
VENV="${1:-.venv}"
VERSION=0.12.8
TOOLS="inferno-collapse-perf inferno-flamegraph inferno-diff-folded"
have=1
for t in $TOOLS; do [ -x "$VENV/bin/$t" ] || have=0; done
# cargo's own record of what it installed there (the tools have no --version)
if [ "$have" = 1 ] && grep -q "\"inferno $VERSION " "$VENV/.crates.toml" 2>/dev/null; then
    exit 0
fi
CARGO="$(command -v cargo 2>/dev/null || true)"
[ -z "$CARGO" ] && [ -x "$HOME/.cargo/bin/cargo" ] && CARGO="$HOME/.cargo/bin/cargo"
if [ -z "$CARGO" ]; then
    echo "iowall setup: no cargo, so no flame-graph tools (profile probe, iowall plot flame);" >&2
    echo "  install Rust >= 1.71 (rustup), then run make setup again" >&2
    exit 0
fi
# cargo's build directory kept in the user's cache: a second virtualenv (a fresh clone, CI)
# installs from it in 1.6 s instead of building again (36 s here, a minute with pip beside)
TARGET="${XDG_CACHE_HOME:-$HOME/.cache}/iowall/cargo-target"
echo "iowall setup: building inferno $VERSION into $VENV/bin (about a minute on 2 CPUs the first time, seconds from the cache after)"
"$CARGO" install --quiet --locked --version "$VERSION" --root "$VENV" --target-dir "$TARGET" inferno
