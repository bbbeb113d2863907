"""The dashboard as a user sees it: Playwright drives Debian's chromium (headless) over a
synthetic store (tests/dashboard_store.py: a limits batch with its report, a trend with a
change point, hostile text), served in a thread. What must be seen: the wall chart's three
modes and two ceilings, links that resolve, probe plots on one time axis, a history summary,
no dialog, no request leaving 127.0.0.1. A screenshot of each page kind is saved in
``IOWALL_SCREENSHOTS`` (docs/img for the documentation) or else the test's tmp directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest

from iowall.store import RunFilter, Store
from tests.dashboard_store import LINK, LONG, XSS, Made, build, served

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="chromium missing (scripts/setup-debs.sh)"
)
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


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Made, Path]]:
    """The served store: its base URL, what it holds, where screenshots go."""
    tmp = tmp_path_factory.mktemp("dash")
    made = build(tmp / "store.db")
    shots = Path(os.environ.get("IOWALL_SCREENSHOTS") or tmp / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with served(Store(made.url)) as port:
        yield f"http://127.0.0.1:{port}", made, shots


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


class User:
    """One browser page that records every console error, dialog and request it makes."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.ctx.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: str) -> Any:
        r = self.page.goto(self.base + path, wait_until="load")
        assert r is not None and r.status == 200, path
        n = self.page.locator("div.plot").count()
        for i in range(n):  # every plot drawn
            self.page.locator("div.plot").nth(i).locator(".main-svg").first.wait_for(timeout=20_000)
        return self.page

    def links_resolve(self) -> int:
        """Every link of the page leads somewhere: HEAD answers 200 (each URL once)."""
        hrefs = set(self.page.locator("a[href]").evaluate_all("as => as.map(a => a.href)"))
        for url in sorted(hrefs):
            assert url.startswith(self.base + "/"), url
            status = urlopen(Request(url.split("#")[0], method="HEAD"), timeout=60).status
            assert status == 200, url
        return len(hrefs)

    def shot(self, shots: Path, name: str) -> None:
        self.page.screenshot(path=str(shots / f"dashboard-{name}.png"), full_page=True)

    def clean(self) -> None:
        """No console error, no dialog, and nothing fetched from anywhere but the server."""
        assert self.errors == [] and self.dialogs == []
        assert [u for u in self.requests if not u.startswith(self.base + "/")] == []
        self.ctx.close()


def _figure(page: Any, i: int) -> Any:
    """The i-th plot's data and layout as plotly.js drew them (full layout: real ranges)."""
    return page.evaluate(
        """(i) => { const gd = document.querySelectorAll('div.plot')[i];
        return {names: gd.data.map(t => t.name), range: gd._fullLayout.yaxis.range,
                xrange: gd._fullLayout.xaxis.range, xtype: gd._fullLayout.xaxis.type,
                title: gd._fullLayout.title.text}; }""",
        i,
    )


def test_report_draws_the_wall_and_links_its_cells(browser: Any, site: tuple[str, Made, Path]) -> None:
    base, made, shots = site
    u = User(browser, base)
    page = u.open(f"/report/{made.batch[:8]}")
    u.shot(shots, "report")
    assert u.links_resolve() > 60  # the cells, the runs, the batch
    assert page.locator(".walls div.plot").count() == 2  # write and read
    for i, title in ((0, "Sequential write"), (1, "Sequential read")):
        f = _figure(page, i)
        assert f["title"].startswith(title)
        assert f["names"] == ["buffered", "uncached", "direct", "memory copy", "direct ceiling"]
        assert f["range"][0] <= 0  # from zero
    # the lines are drawn: five traces with a path each, error bars on the three modes
    wall = page.locator(".walls div.plot").first
    assert wall.locator(".scatterlayer .trace path.js-line").count() == 5
    assert wall.locator(".scatterlayer .trace .errorbar").count() == 9
    # every mode cell of the tables links to exactly its runs
    cells = page.locator("a.cell")
    assert cells.count() == 18  # 2 directions x 3 jobs x 3 modes
    href = cells.first.get_attribute("href")
    assert href == "/runs?ids=" + ",".join(map(str, made.limits[("write", "buffered", 1)]))
    # a click on the chart's buffered point at 4 jobs opens its runs
    box = wall.bounding_box()
    px, py = page.evaluate("""() => { const gd = document.querySelector('.walls div.plot');
        const L = gd._fullLayout, t = gd.calcdata[0][2];
        return [L.xaxis._offset + L.xaxis.c2p(t.x), L.yaxis._offset + L.yaxis.c2p(t.y)]; }""")
    page.mouse.click(box["x"] + px, box["y"] + py)
    page.wait_for_url("**/runs?ids=*")
    shown = [int(x) for x in page.locator("#runs td:first-child a").all_inner_texts()]
    assert sorted(shown) == sorted(made.limits[("write", "buffered", 4)])
    u.clean()


def test_run_page_headline_links_and_one_time_axis(browser: Any, site: tuple[str, Made, Path]) -> None:
    base, made, shots = site
    rid = made.limits[("write", "buffered", 2)][0]
    u = User(browser, base)
    page = u.open(f"/run/{rid}")
    u.shot(shots, "run")
    assert u.links_resolve() > 5
    assert page.locator("#headline").inner_text().startswith("write bw 2")
    assert page.locator("#metrics tr").nth(1).inner_text().startswith("write_bw_bytes_per_s")
    # the headline and the Why come before the plots
    assert (
        page.locator("#headline").bounding_box()["y"]
        < page.locator("h2", has_text="Why").bounding_box()["y"]
        < page.locator("div.plot").first.bounding_box()["y"]
    )
    ranges = {tuple(_figure(page, i)["xrange"]) for i in range(page.locator("div.plot").count())}
    assert ranges == {(0.97, 1.57)}  # fio's samples: 0.97 s + 6 x 0.1 s; cpu's start at 1.0
    modes = {a.inner_text(): a.get_attribute("href") for a in page.locator("a.mode-link").all()}
    assert modes == {
        "direct": f"/run/{made.limits[('write', 'direct', 2)][0]}",
        "uncached": f"/run/{made.limits[('write', 'uncached', 2)][0]}",
    }
    page.click("#history-link")
    page.wait_for_load_state("load")
    assert page.locator("table#summary tbody tr").count() == 1
    st = Store(made.url)
    fp = st.get_run(rid).fingerprint()
    same = [r.id for r in st.runs(RunFilter(recipe="limits")) if r.fingerprint() == fp]
    assert len(same) == 3 + 16 + 1  # the batch's three, the trend's copies, the script label
    assert page.locator("table#summary tbody td").nth(2).inner_text() == str(len(same))
    u.clean()


def test_run_page_narrowed_to_nothing_draws_no_negative_size(
    browser: Any, site: tuple[str, Made, Path]
) -> None:
    """A window (or a full-page screenshot's passing resize) that leaves the flame graph under
    its 20 px of padding: the graph's script clamps, so the console stays clean (a CI run
    once failed on inferno's "-20")."""
    base, made, _shots = site
    u = User(browser, base)
    page = u.open(f"/run/{made.limits[('write', 'buffered', 2)][0]}")
    page.wait_for_function(
        "() => document.querySelector('object.flame').contentDocument"
        " && document.querySelector('object.flame').contentDocument.getElementById('frames')"
    )
    for width in (40, 20, 1, 1400):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(200)
    u.clean()


def test_history_summary_dates_and_zero(browser: Any, site: tuple[str, Made, Path]) -> None:
    base, made, shots = site
    u = User(browser, base)
    page = u.open("/history?sel=label%3Dtrend&x=commit")
    u.shot(shots, "history")
    assert u.links_resolve() > 5
    row = page.locator("table#summary tbody tr")
    assert row.count() == 1 and "-30" in row.inner_text()
    f = _figure(page, 0)
    assert f["xtype"] == "category" and f["range"][0] <= 0
    assert page.locator("table.changes tr.worse a.cmp").count() == 1
    cmp = page.locator("table.changes a.cmp").get_attribute("href")
    page = u.open("/history?sel=label%3Dtrend&x=date")
    assert _figure(page, 0)["xtype"] == "date"
    # a series too short to search says so
    page = u.open("/history?sel=label%3Dhostile")
    assert "too few runs" in page.locator("p.nochange").first.inner_text()
    page = u.open(cmp)
    u.shot(shots, "compare")
    assert u.links_resolve() > 3
    heads = page.locator("table.compare th").all_inner_texts()
    assert heads[:5] == ["set", "point", "metric", "base median", "new median"]
    for a in page.locator("a.download").all():
        body = urlopen(base + str(a.get_attribute("href")), timeout=30).read()
        assert body and b"write_bw_bytes_per_s" in body
    u.clean()


def test_runs_list_counts_sorts_and_stays_narrow(browser: Any, site: tuple[str, Made, Path]) -> None:
    base, made, shots = site
    u = User(browser, base)
    page = u.open("/runs")
    u.shot(shots, "runs")
    total = len(made.memcopy) + sum(map(len, made.limits.values())) + len(made.trend) + len(made.hostile)
    assert page.locator("#count").inner_text().startswith(f"{total} runs match; 50 shown")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1400, f"the list is {width} px wide"  # the 5,000-character value is cut
    cut = page.locator(f"code[title*='note={LONG}']").first
    assert cut.inner_text().endswith("…") and len(cut.inner_text()) < 100
    page.click("#runs th:has-text('result')")
    values = page.locator("#runs td:last-child").evaluate_all(
        "tds => tds.map(td => Number(td.dataset.sort)).filter(v => v > 0)"
    )
    assert values == sorted(values, reverse=True) and len(values) > 10
    assert set(page.locator("#runs td.mode").all_inner_texts()) >= {"buffered", "direct", "uncached"}
    u.clean()


def test_hostile_text_stays_text(browser: Any, site: tuple[str, Made, Path]) -> None:
    """A label that is a script, a point value and a series name that are a link: shown as
    text on the run page, in plot titles and legends, on history; no link inside a plot."""
    base, made, _ = site
    u = User(browser, base)
    for path in (
        f"/run/{made.hostile['script']}",
        f"/run/{made.hostile['link']}",
        "/history?sel=label%3Dhostile",
        f"/runs?label={XSS}",
    ):
        page = u.open(path)
        assert page.locator("div.plot a").count() == 0, path
        assert page.locator("main script:not([type='application/json'])").count() == 0, path
    page = u.open("/history?sel=label%3Dhostile")  # the point's value is in the plot's title
    assert any(LINK in t for t in page.locator("div.plot .gtitle").all_text_contents())
    assert XSS in u.open(f"/run/{made.hostile['script']}").inner_text("main")
    u.clean()
