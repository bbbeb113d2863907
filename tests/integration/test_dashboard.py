"""`iowall serve` driven by a real browser (Playwright with Debian's chromium, headless) on a
store of real runs made here (a plan with the default probes, two labels, one label that is
markup), plus synthetic runs copied from a real one with a step in their bandwidth so that
history has a change point to show. Every page loads without a console error, its plots draw,
its links lead somewhere real, a label is text, and the server listens on loopback only."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from iowall.model import PROFILE_ARTIFACT, Metric
from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    needs_root,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium missing (scripts/setup-debs.sh)"),
]

XSS = "<script>alert(1)</script>"
PLAN = """label = "base"
repeat = 2
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "512M"
direct = 0
[bed]
kind = "tmpfs"
[axes]
jobs = [1]
"""
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Where to keep the pages' screenshots (docs/img when making the documentation).
SHOTS = os.environ.get("IOWALL_SCREENSHOTS")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Real runs: base and new (default probes: series, profile) and one labelled XSS; then a
    synthetic 'trend' series: 8 copies of a real run at its bandwidth, 8 at 70% of it."""
    tmp = tmp_path_factory.mktemp("dash")
    url = f"sqlite:///{tmp / 'db.sqlite'}"
    env = dict(os.environ, IOWALL_DB=url, XDG_DATA_HOME=str(tmp / "data"), XDG_STATE_HOME=str(tmp / "state"))
    (tmp / "plan.toml").write_text(PLAN)
    ids: dict[str, Any] = {}
    for label, probes in (("base", "default,profile"), ("new", "default,profile"), (XSS, "cpu")):
        doc = json.loads(
            iowall(
                "run",
                str(tmp / "plan.toml"),
                "--label",
                label,
                "--probes",
                probes,
                "--format",
                "json",
                env=env,
                check=True,
            ).stdout
        )
        ids[label] = doc["run_ids"]
    st = Store(url)
    profiled = [
        r
        for r in map(st.get_run, ids["base"] + ids["new"])
        if any(a.name == PROFILE_ARTIFACT for a in r.artifacts)
    ]
    real = profiled[0] if profiled else st.get_run(ids["base"][0])
    ids["profiled"] = real.id if profiled else None
    bw = next(m for m in real.metrics if m.name == "write_bw_bytes_per_s")
    trend = []
    for i in range(16):
        f = (1.0 if i < 8 else 0.7) * (1 + 0.01 * (i % 3))
        metrics = tuple(
            Metric(m.name, m.value * f, m.unit, m.direction) if m is bw else m for m in real.metrics
        )
        trend.append(
            dataclasses.replace(
                real,
                id=None,
                uuid=None,
                label="trend",
                metrics=metrics,
                started_at=real.started_at + 1000 + i,
                finished_at=real.finished_at + 1000 + i,
            )
        )
    ids["trend"] = st.add_runs(trend)
    return url, env, ids


@pytest.fixture(scope="module")
def server(store: tuple[str, dict[str, str], dict[str, Any]]) -> Iterator[tuple[str, int]]:
    """``iowall serve --port 0`` on the store; the URL it prints and its pid."""
    url, env, _ = store
    yield from serve(url, env)


@pytest.fixture(scope="module")
def pg_server(
    store: tuple[str, dict[str, str], dict[str, Any]], pg_cluster: Any
) -> Iterator[tuple[str, str]]:
    """The same runs copied (``iowall db copy``) into a PostgreSQL database of the suite's
    own server, served: its URL and the store's."""
    url, env, _ = store
    name = pg_cluster.fresh_db()
    pg = pg_cluster.url(name)
    try:
        iowall("db", "copy", url, pg, env=env, check=True)
        for base, _ in serve(pg, env):
            yield base, pg
    finally:
        Store(pg).engine.dispose()
        pg_cluster.drop_db(name)


def serve(url: str, env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """Run ``iowall serve --port 0`` on ``url`` while the caller holds it: its URL and pid."""
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    p = subprocess.Popen(
        [exe, "serve", "--db", url, "--port", "0"],
        env=env,
        text=True,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    assert p.stderr is not None
    line = p.stderr.readline()
    m = re.search(r"at (http://127\.0\.0\.1:\d+)/", line)
    try:
        assert m, line
        yield m.group(1), p.pid
    finally:
        p.terminate()
        p.wait(timeout=20)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        yield ctx
        ctx.close()
    shutil.rmtree(profile, ignore_errors=True)


class Visit:
    """One page opened in the browser, with every console error and page error it raised and
    every dialog (an alert would be a script injected through a label)."""

    def __init__(self, ctx: Any, url: str) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page = ctx.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.response = self.page.goto(url, wait_until="load")
        self.page.wait_for_load_state("networkidle")

    def ok(self) -> None:
        assert self.response is not None and self.response.status == 200, self.page.url
        assert self.errors == [], self.errors
        assert self.dialogs == []

    def plots_drawn(self, shot: str | None = None) -> int:
        """Every plot on the page has drawn something: its screenshot holds more than one
        colour. Returns how many plots there are."""
        from PIL import Image

        plots = self.page.locator("div.plot")
        n = plots.count()
        for i in range(n):
            div = plots.nth(i)
            div.locator(".main-svg").first.wait_for(timeout=20_000)
            png = div.screenshot()
            colours = Image.open(io.BytesIO(png)).convert("RGB").getcolors(maxcolors=1 << 20)
            assert colours is not None and len(colours) > 20, f"plot {i} of {self.page.url} is blank"
        if shot and SHOTS:
            self.page.screenshot(path=os.path.join(SHOTS, f"dashboard-{shot}.png"), full_page=True)
        return n


def test_runs_page_pages_and_filters(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    base, _ = server
    v = Visit(browser, f"{base}/runs")
    v.ok()
    v.plots_drawn("runs")
    ids = [int(x) for x in v.page.locator("#runs td:first-child a").all_inner_texts()]
    url, _, made = store
    assert ids == sorted((r.id for r in Store(url).runs(RunFilter()) if r.id), reverse=True)
    v = Visit(browser, f"{base}/runs?label=new")
    v.ok()
    assert [int(x) for x in v.page.locator("#runs td:first-child a").all_inner_texts()] == sorted(
        made["new"], reverse=True
    )
    # keyset paging: the older page starts below the last id shown
    v = Visit(browser, f"{base}/runs?label=trend&before={made['trend'][3]}")
    v.ok()
    assert [int(x) for x in v.page.locator("#runs td:first-child a").all_inner_texts()] == sorted(
        made["trend"][:3], reverse=True
    )
    # a link from the list opens that run
    v = Visit(browser, f"{base}/runs?label=base")
    v.page.locator("#runs td:first-child a").first.click()
    v.page.wait_for_load_state("networkidle")
    assert v.page.url == f"{base}/run/{max(made['base'])}"
    assert v.errors == []


def test_run_page(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    base, _ = server
    url, _, made = store
    rid = made["base"][0]
    run = Store(url).get_run(rid)
    v = Visit(browser, f"{base}/run/{rid}")
    v.ok()
    assert v.plots_drawn("run") >= 2  # fio's bandwidth and at least one probe
    text = v.page.locator("#metrics").inner_text()
    assert "write_bw_bytes_per_s" in text and ("MiB/s" in text or "GiB/s" in text)
    # the same run by uuid
    assert Visit(browser, f"{base}/run/{run.uuid}").page.locator("h1").inner_text().startswith(f"Run {rid}:")
    # the raw fio JSON is the stored one, byte for byte
    href = v.page.locator("a", has_text="fio.json").get_attribute("href")
    body = urlopen(base + href, timeout=30).read().decode()
    assert body == next(a.body for a in run.artifacts if a.name == "fio.json")
    assert "jobs" in json.loads(body)


def test_compare_page(server: tuple[str, int], browser: Any) -> None:
    base, _ = server
    v = Visit(browser, f"{base}/compare?base=base&new=new")
    v.ok()
    assert v.plots_drawn("compare") == 1
    assert "write bw" in v.page.locator("table.compare").inner_text()
    bad = Visit(browser, f"{base}/compare?base=/etc/passwd.json&new=new")
    assert bad.response is not None and bad.response.status == 400
    assert "reads its store only" in bad.page.inner_text("p.error")


def test_history_change_point_links(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    base, _ = server
    made = store[2]
    v = Visit(browser, f"{base}/history?sel=label%3Dtrend")
    v.ok()
    v.plots_drawn("history")
    rows = v.page.locator("table.changes tr.worse")
    assert rows.count() == 1
    cmp = rows.first.locator("a.cmp").get_attribute("href")
    flame = rows.first.locator("a.flamediff").get_attribute("href")
    # the compare of the two sides: 8 runs against 8, a 30% drop
    c = Visit(browser, base + cmp)
    c.ok()
    c.plots_drawn()
    t = c.page.locator("table.compare").inner_text()
    assert "8:8" in t and "worse" in t and "-3" in t
    ids = made["trend"]
    assert flame == f"/flame/diff?base={ids[7]}&new={ids[8]}"  # last good, first bad


def test_flame_graphs(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    """A run's flame graph inline and as SVG, and the differential one of a change point.
    Needs a run whose profile probe worked (perf record + perf script)."""
    base, _ = server
    made = store[2]
    rid = made["profiled"]
    assert rid is not None, "the profile probe failed on every run (see the runs' notes)"
    v = Visit(browser, f"{base}/run/{rid}")
    v.ok()
    assert v.page.locator("object.flame").count() == 1
    for path in (f"/flame/{rid}.svg", f"/flame/diff?base={made['trend'][7]}&new={made['trend'][8]}"):
        svg = urlopen(base + path, timeout=60)
        assert svg.headers["Content-Type"].startswith("image/svg+xml")
        assert b"<svg" in svg.read()


def test_no_profile_said(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    """A run without a profile says so, and its flame URL answers 404 with the reason."""
    base, _ = server
    rid = store[2][XSS][0]  # recorded with --probes cpu
    v = Visit(browser, f"{base}/run/{rid}")
    v.ok()
    assert "No CPU profile recorded" in v.page.inner_text("main")
    with pytest.raises(HTTPError) as e:
        urlopen(f"{base}/flame/{rid}.svg", timeout=60)
    assert e.value.code == 404 and b"no profile data" in e.value.read()


def test_report_page(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    base, _ = server
    url, _, made = store
    batch = Store(url).get_run(made["base"][0]).batch
    v = Visit(browser, f"{base}/report/{batch[:8]}")
    v.ok()
    v.plots_drawn("report")
    assert v.page.locator(f"a[href='/run/{made['base'][0]}']").count() >= 1
    missing = Visit(browser, f"{base}/report/ffffffff")
    assert missing.response is not None and missing.response.status == 404


def test_label_is_text(
    server: tuple[str, int], browser: Any, store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    base, _ = server
    rid = store[2][XSS][0]
    for path in ("/runs", f"/run/{rid}", f"/runs?label={XSS}"):
        v = Visit(browser, base + path)
        v.ok()
        assert XSS in v.page.inner_text("main")
        assert v.page.locator("main script:not([type='application/json'])").count() == 0


def test_listens_on_loopback_only(
    server: tuple[str, int], store: tuple[str, dict[str, str], dict[str, Any]]
) -> None:
    base, _ = server
    port = int(base.rsplit(":", 1)[1])
    listening = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(f).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                listening.append(local.rsplit(":", 1)[0])
    assert listening == ["0100007F"]  # 127.0.0.1, and nothing on any other address
    r = iowall("serve", "--host", "0.0.0.0", "--port", "0", env=store[1], timeout=60)
    assert r.returncode == 2 and "--allow-remote" in r.stderr


def _pg_paths(url: str, made: dict[str, Any]) -> list[tuple[str, int]]:
    """Each page of the dashboard on the store ``url`` (ids found there by uuid, as a copy
    may number runs anew), with the plots it must draw at least."""
    src = Store(made["sqlite"])
    st = Store(url)
    ids = {r.uuid: r.id for r in st.runs(RunFilter())}
    run = ids[src.get_run(made["base"][0]).uuid]
    batch = st.get_run(run).batch
    return [
        ("/runs", 0),
        (f"/run/{run}", 2),
        ("/compare?base=base&new=new", 1),
        ("/history?sel=label%3Dtrend", 1),
        (f"/report/{batch[:8]}", 0),
        (f"/runs?label={XSS}", 0),
    ]


def test_pages_on_postgresql(
    server: tuple[str, int],
    pg_server: tuple[str, str],
    browser: Any,
    store: tuple[str, dict[str, str], dict[str, Any]],
) -> None:
    """Every page served from PostgreSQL loads with no console error and draws its plots;
    its compare table and history's change points are those of the SQLite store."""
    base, pg = pg_server
    made = dict(store[2], sqlite=store[0])
    for path, plots in _pg_paths(pg, made):
        v = Visit(browser, base + path)
        v.ok()
        assert v.plots_drawn() >= plots, path
    on_pg = Visit(browser, f"{base}/compare?base=base&new=new")
    on_sqlite = Visit(browser, f"{server[0]}/compare?base=base&new=new")
    assert (
        on_pg.page.locator("table.compare").inner_text()
        == on_sqlite.page.locator("table.compare").inner_text()
    )
    h = Visit(browser, f"{base}/history?sel=label%3Dtrend")
    rows = h.page.locator("table.changes tr.worse")
    assert rows.count() == 1
    c = Visit(browser, base + str(rows.first.locator("a.cmp").get_attribute("href")))
    c.ok()
    assert "8:8" in c.page.locator("table.compare").inner_text()
