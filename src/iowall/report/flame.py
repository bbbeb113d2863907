"""Flame graphs of stored CPU profiles, drawn by the inferno crate's tools: one profile
(``inferno-flamegraph``) or base against new (``inferno-diff-folded --normalize`` then
``inferno-flamegraph``: red grew, blue shrank). The SVG is interactive: click to zoom, Ctrl-F to
search (docs/flamegraphs.md)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping

from ..analysis.explain.kernel_paths import Attribution
from ..machine.atomic import write_text
from ..probes.profile import inferno_tool
from ..vocab.errors import IowallError, UserError

#: kernel frames (``_[k]``) orange, user frames red: the palette of Brendan Gregg's
#: ``--color=java``, which kernel people read in perf flame graphs.
PALETTE = "java"
TIMEOUT_S = 300

#: inferno's script sizes the frames to the SVG's width less 2 x 10 px of padding, and a
#: window (or a full-page screenshot's passing resize) that leaves the SVG under 20 px wide
#: makes that width negative: an error in the browser's console. Clamped at 1 px (0 would
#: divide by 0 where it places text), the graph is empty for that moment and redraws at the
#: next resize (tests/integration/test_dashboard_browser.py).
FRAMES_WIDTH = "frames.attributes.width.value = svg.width.baseVal.value - xpad * 2;"
FRAMES_WIDTH_CLAMPED = "frames.attributes.width.value = Math.max(1, svg.width.baseVal.value - xpad * 2);"


def folded_text(stacks: Mapping[str, int]) -> str:
    """``stack count`` lines, sorted by stack (the order the renderer merges in)."""
    return "".join(f"{s} {n}\n" for s, n in sorted(stacks.items()))


def _tool(name: str) -> str:
    path = inferno_tool(name)
    if path is None:
        raise UserError(
            f"{name} not found: run 'make setup' (it builds the inferno crate "
            "into the virtualenv), or 'cargo install inferno'"
        )
    return path


def _run(argv: list[str], stdin: str) -> str:
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        raise IowallError(f"{os.path.basename(argv[0])} failed ({r.returncode}): {tail}")
    return r.stdout


def subtitle(att: Attribution, n: int = 4) -> str:
    """The heaviest busy paths in one line: ``copy 62%, page_cache 9%, …``."""
    return ", ".join(f"{p.path} {p.share:.0%}" for p in att.ranked()[:n])


def flamegraph(stacks: Mapping[str, int], title: str, sub: str = "") -> str:
    """The SVG of one profile."""
    argv = [
        _tool("inferno-flamegraph"),
        "--title",
        title,
        "--colors",
        PALETTE,
        "--hash",
        "--countname",
        "samples",
    ]
    return _clamped(_run(argv + (["--subtitle", sub] if sub else []), folded_text(stacks)))


def diff_flamegraph(base: Mapping[str, int], new: Mapping[str, int], title: str, sub: str = "") -> str:
    """The SVG of ``new`` drawn with ``base``'s differences: both profiles normalised to the
    same total first (``--normalize``), so a longer run is not a redder one; frame widths are
    ``new``, colours the change (red more, blue less)."""
    diff = _tool("inferno-diff-folded")
    with tempfile.TemporaryDirectory(prefix="iowall-flame-") as d:
        a, b = os.path.join(d, "base.folded"), os.path.join(d, "new.folded")
        for path, stacks in ((a, by_thread_kind(base)), (b, by_thread_kind(new))):
            with open(path, "w") as f:
                f.write(folded_text(stacks))
        diffed = _run([diff, "--normalize", a, b], "")
    argv = [_tool("inferno-flamegraph"), "--title", title, "--hash", "--countname", "samples (normalised)"]
    return _clamped(_run(argv + (["--subtitle", sub] if sub else []), diffed))


def _clamped(svg: str) -> str:
    """The SVG with its script's frames width kept at 1 px or more (see ``FRAMES_WIDTH``)."""
    return svg.replace(FRAMES_WIDTH, FRAMES_WIDTH_CLAMPED)


_NUMBER = re.compile(r"\d+")


def by_thread_kind(stacks: Mapping[str, int]) -> dict[str, int]:
    """Stacks with the numbers of their thread name (the root frame) made ``N``: two runs'
    ``iou-wrk-2487`` and ``iou-wrk-9120`` are the same kind of thread, and a differential
    graph must pair them."""
    out: dict[str, int] = {}
    for stack, n in stacks.items():
        comm, sep, rest = stack.partition(";")
        key = _NUMBER.sub("N", comm) + sep + rest
        out[key] = out.get(key, 0) + n
    return out


def write_svg(svg: str, path: str) -> None:
    """Write the SVG atomically (``-`` is stdout)."""
    write_text(path, svg, what="flame graph")
