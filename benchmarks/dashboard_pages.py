"""The dashboard's pages on a large store: server time (the wall time of a GET over loopback
against a running ``iowall serve``, the whole page received) and first paint in Debian's
chromium through Playwright (``first-contentful-paint``, and the time until every plot has
drawn its SVG), each the median of several loads after one unmeasured one.

Used by store_scale.py (``--pages``); the pages are those a team opens: the runs list, a run,
the compare of two labels of 500 runs, the history of a point (1,000 runs), a stored report.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote
from urllib.request import urlopen

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: When every plot has drawn (plotly's .main-svg in each div.plot), in ms since navigation.
PAINTED = """() => new Promise(done => {
  const ready = () => [...document.querySelectorAll('div.plot')].every(
      d => d.querySelector('.main-svg'));
  const check = () => ready() ? done(performance.now()) : requestAnimationFrame(check);
  check();
})"""
#: First contentful paint, in ms since navigation (the entry may be queued after "load").
FCP = """() => new Promise(done => new PerformanceObserver(list => {
  for (const e of list.getEntries()) if (e.name === 'first-contentful-paint') done(e.startTime);
}).observe({type: 'paint', buffered: true}))"""


def pages(labels: Sequence[str], run_id: int, batch: str | None) -> list[tuple[str, str]]:
    """(name, path) of each page timed."""
    a, b = labels[0], labels[1]
    out = [
        ("runs list (newest 50)", "/runs"),
        ("a run", f"/run/{run_id}"),
        ("compare A B (500 each)", f"/compare?base={quote(a)}&new={quote(b)}"),
        ("history of runs 1-1,000 (two labels)", "/history?sel=" + quote("ids=1-1000")),
    ]
    if batch is not None:
        out.append(("a stored report", f"/report/{quote(batch)}"))
    return out


@contextmanager
def serving(db: Path | str, env: dict[str, str]) -> Iterator[str]:
    """``iowall serve --port 0`` on ``db`` while the caller holds it; its base URL."""
    p = subprocess.Popen(
        [sys.executable, "-m", "iowall", "serve", "--db", str(db), "--port", "0"],
        env=env,
        text=True,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        assert p.stderr is not None
        m = re.search(r"at (http://127\.0\.0\.1:\d+)/", p.stderr.readline())
        if m is None:
            raise SystemExit("iowall serve did not start")
        yield m.group(1)
    finally:
        p.terminate()
        p.wait(timeout=30)


def server_time(url: str, reps: int) -> tuple[float, int]:
    """Median seconds of a GET of ``url`` (after one unmeasured) and the page's bytes."""
    size, times = 0, []
    for i in range(reps + 1):
        t0 = time.perf_counter()
        with urlopen(url, timeout=120) as r:
            if r.status != 200:
                raise SystemExit(f"{url}: HTTP {r.status}")
            size = len(r.read())
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), size


def paint_times(ctx: Any, url: str, reps: int) -> tuple[float, float]:
    """Median ms to first contentful paint and to every plot drawn, in a fresh tab each."""
    fcp, drawn = [], []
    for i in range(reps + 1):
        page = ctx.new_page()
        page.goto(url, wait_until="load", timeout=120_000)
        d = page.evaluate(PAINTED)
        f = page.evaluate(FCP)
        page.close()
        if i:
            fcp.append(float(f))
            drawn.append(float(d))
    return statistics.median(fcp), statistics.median(drawn)


def measure(
    db: Path | str,
    n: int,
    env: dict[str, str],
    labels: Sequence[str],
    run_id: int,
    batch: str | None,
    reps: int,
) -> list[str]:
    """One table line per page: server time, bytes, first paint, all plots drawn."""
    from playwright.sync_api import sync_playwright  # only when pages are timed

    lines = []
    with serving(db, env) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        for name, path in pages(labels, run_id, batch):
            wall, size = server_time(base + path, reps)
            fcp, drawn = paint_times(ctx, base + path, reps)
            lines.append(
                f"| {n:,} | page: {name} | {wall:.2f} s | {size / 1024:,.0f} KiB | "
                f"first paint {fcp / 1000:.2f} s | plots drawn {drawn / 1000:.2f} s |"
            )
            print(lines[-1], flush=True)
        browser.close()
    return lines
