"""``iowall ARGS`` run in a fresh interpreter, to see what a command imports (its start-up
cost): the exit codes, which of the named modules ended up in ``sys.modules``, and stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")

_CODE = """\
import contextlib, io, json, sys
from iowall.cli.main import main
calls, watch = json.loads(sys.argv[1])
rcs, outs = [], []
for args in calls:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        rcs.append(main(args))
    outs.append(out.getvalue())
seen = sorted(w for w in watch if any(m == w or m.startswith(w + ".") for m in sys.modules))
print(json.dumps([rcs, seen, outs]))
"""


def fresh_run(calls: Sequence[Sequence[str]], watch: Sequence[str]) -> tuple[list[int], list[str], list[str]]:
    """Run each of ``calls`` (``iowall`` arguments) in one new interpreter: their exit codes,
    the modules of ``watch`` (a name covers its submodules) imported by then, their stdout."""
    cp = subprocess.run(
        [sys.executable, "-c", _CODE, json.dumps([list(map(list, calls)), list(watch)])],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        check=True,
    )
    rcs, seen, outs = json.loads(cp.stdout.splitlines()[-1])
    return rcs, seen, outs
