"""The dashboard's pure parts: run ids as a selection, dates, bundle refusal, the segments a
history is cut into at its change points, figures without NaN, loopback detection, the
masked store URL, strict run ids, Host names, the flame SVG's CSP, the wall chart, history
by commit, a point's mode and cut text."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math

import pytest

from iowall.actions.compare import compare_selections
from iowall.actions.history import histories
from iowall.actions.selection import run_id
from iowall.analysis.regress.history import from_rows
from iowall.analysis.scaling.limits import summarise
from iowall.cli.serve import loopback
from iowall.machine.dirs import redact_url
from iowall.model import Metric, Point, Run
from iowall.recipes.limits.report import LimitsContext, limits_report
from iowall.store.db import COUNTED
from iowall.vocab.errors import UserError
from iowall.web.app import templates
from iowall.web.figures import history_figure, segments
from iowall.web.guard import host_name, svg_csp
from iowall.web.pages import clean, mode, other_modes, point_text, report_context, run_rows, short
from iowall.web.queries import RunPage, day, ids_text
from iowall.web.wall import cell_links, wall_figures


def test_ids_text_joins_ranges() -> None:
    assert ids_text([9, 3, 4, 5, 12, 11]) == "ids=3-5,9,11-12"
    assert ids_text([7]) == "ids=7"


def test_day() -> None:
    assert day("1970-01-02", "since") == 86400.0
    with pytest.raises(UserError, match="YYYY-MM-DD"):
        day("yesterday", "since")


def test_bundle_selection_refused_before_the_file_is_looked_at(tmp_path: object) -> None:
    # the same refusal whether or not the file exists: a URL is no file-existence oracle
    for text in ("/etc/passwd.json", "/nonexistent/x.json:label=a"):
        with pytest.raises(UserError, match="reads its store only"):
            compare_selections(None, ["base", text], None, files=False)
        with pytest.raises(UserError, match="reads its store only"):
            histories(None, text, "", "time")  # type: ignore[arg-type]


def test_segments_follow_the_change_points() -> None:
    rows = [("s", float(i), 100.0 + (i % 3) if i < 10 else 70.0 + (i % 3)) for i in range(20)]
    (h,) = from_rows(rows)
    assert [w.change.index for w in h.windows] == [10]
    segs = segments(h)
    assert [(s.first, s.last) for s in segs] == [(0, 9), (10, 19)]
    assert segs[0].median == pytest.approx(101.0) and segs[1].median == pytest.approx(71.0)
    fig = history_figure(h)
    bands = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert len(bands) == 2 and all(b["y0"] <= b["y1"] for b in bands)


def test_clean_makes_figures_json() -> None:
    fig = clean({"data": [{"y": [1.0, math.nan, math.inf]}], "n": (2, -math.inf)})
    assert json.loads(json.dumps(fig, allow_nan=False)) == {
        "data": [{"y": [1.0, None, None]}],
        "n": [2, None],
    }


def test_loopback() -> None:
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost")
    assert not loopback("0.0.0.0")


def test_redact_url() -> None:
    assert redact_url("postgresql://u:s3cret@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_url("postgresql://u:p/a:ss@h/db") == "postgresql://u:***@h/db"
    assert (
        redact_url("postgresql://h/db?user=u&password=s3cret&sslpassword=k")
        == "postgresql://h/db?user=u&password=***&sslpassword=***"
    )
    assert redact_url("postgresql://u@/db?host=/tmp") == "postgresql://u@/db?host=/tmp"
    assert redact_url("sqlite:////tmp/a:b@c.db") == "sqlite:////tmp/a:b@c.db"
    assert redact_url("postgresql+psycopg://u:p%40ss@h:5432/db") == "postgresql+psycopg://u:***@h:5432/db"
    assert (
        redact_url("postgresql://h/db?user=u&password=x&sslmode=require")
        == "postgresql://h/db?user=u&password=***&sslmode=require"
    )


def test_run_id_is_ascii_digits_in_range() -> None:
    assert run_id("9") == 9 and run_id(" 12 ") == 12 and run_id(str(2**63 - 1)) == 2**63 - 1
    for bad in ("９", "²", "99999999999999999999", str(2**63), "-1", "", "1e3", "0x10"):
        assert run_id(bad) is None, bad


def test_host_name() -> None:
    assert host_name("LocalHost:8040") == "localhost" and host_name("[::1]:80") == "::1"
    assert host_name("box.example.") == "box.example" and host_name("::1") == "::1"


def test_svg_csp_hashes_every_cdata_section_as_one_text() -> None:
    svg = (
        '<svg onload="init(evt)"><script type="text/ecmascript"><![CDATA[var a = 1;\n]]>'
        "<![CDATA[function init(e) {}]]></script></svg>"
    )
    csp = svg_csp(svg)
    text = "var a = 1;\nfunction init(e) {}"  # what the browser's parser hands the script
    sha = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    assert f"'sha256-{sha}'" in csp and "'unsafe-hashes'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert svg_csp("<svg></svg>").count("script-src 'none'") == 1


def test_wall_figures_from_a_limits_report() -> None:
    """Per direction: the three modes with their spread and the links to their runs, and the
    memory-copy (at the threads each point could use) and direct ceilings as lines."""
    runs = []
    for i, (rw, m, jobs, gib) in enumerate(
        [("write", m, j, g * j) for m, g in (("buffered", 1.0), ("direct", 2.0)) for j in (1, 2, 4)]
    ):
        p = {"kind": "fio", "rw": rw, "direct": int(m == "direct"), "jobs": jobs}
        runs.append(
            Run(
                Point("limits", p),
                "l",
                "ok",
                0,
                1,
                (Metric("write_bw_bytes_per_s", gib * 2**30, "B/s"),),
                id=i + 1,
            )
        )
    runs.append(
        Run(
            Point("limits", {"kind": "memcopy", "threads": 1}),
            "l",
            "ok",
            0,
            1,
            (Metric("memcopy_bytes_per_s", 20 * 2**30, "B/s"),),
            id=99,
        )
    )
    rep = limits_report(
        summarise(runs, cpus=1),
        LimitsContext(
            bed={"kind": "ram"},
            host={"cpu_count": 1, "cpu_model": "x", "mem_total_bytes": 1},
            kernel="6.18",
            fio_version="3",
            batch="b",
        ),
    )
    (fig,) = wall_figures(rep.data)
    by = {t["name"]: t for t in fig["data"]}
    assert list(by) == ["buffered", "direct", "memory copy", "direct ceiling"]
    assert by["buffered"]["x"] == [1, 2, 4] and by["buffered"]["y"] == [1.0, 2.0, 4.0]
    assert by["direct"]["customdata"] == ["/runs?ids=4", "/runs?ids=5", "/runs?ids=6"]
    assert by["memory copy"]["y"] == [20.0, 20.0, 20.0]  # one CPU: one thread at every count
    assert by["direct ceiling"]["y"] == [8.0, 8.0]
    links = cell_links(rep)
    table = next(i for i, s in enumerate(rep.sections) if s.title.startswith("Sequential write"))
    assert links[(table, 2, 1)] == "/runs?ids=3" and links[(table, 0, 3)] == "/runs?ids=4"


def test_report_page_cells_read_as_the_cli_prints_them() -> None:
    """A stored report's cells are numbers with units: the page formats them as the text
    report does (``report.table.cell_text``), never as the objects' own repr."""
    runs = [
        Run(
            Point("limits", {"kind": "fio", "rw": "write", "direct": d, "jobs": 1}),
            "l",
            "ok",
            0,
            1,
            (Metric("write_bw_bytes_per_s", (1 + d) * 2**30, "B/s"),),
            id=d + 1,
        )
        for d in (0, 1)
    ]
    rep = limits_report(
        summarise(runs, cpus=1),
        LimitsContext(
            bed={"kind": "ram"},
            host={"cpu_count": 1, "cpu_model": "x", "mem_total_bytes": 1},
            kernel="6.18",
            fio_version="3",
            batch="b",
        ),
    )
    env = templates()
    env.globals["asset"] = lambda name: name
    html = env.get_template("report.html").render(rep=rep, **report_context(rep))
    assert '<a class="cell" href="/runs?ids=1">1024MiB/s</a>' in html
    assert '<td class="num">0.50</td>' in html and "Value(" not in html


def test_history_x_by_commit_has_no_half_ticks() -> None:
    rows = [("s", float(i), (100.0 if i < 10 else 70.0) + i % 3) for i in range(20)]
    (h,) = from_rows(rows)
    h = dataclasses.replace(
        h, observations=tuple(dataclasses.replace(o, commit=f"c{o.index // 2}") for o in h.observations)
    )
    fig = history_figure(h, "commit")
    assert fig["layout"]["xaxis"]["type"] == "category"
    assert fig["layout"]["xaxis"]["categoryarray"] == [f"c{i}" for i in range(10)]
    assert fig["layout"]["yaxis"]["rangemode"] == "tozero"
    (change,) = [s for s in fig["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    assert change["x0"] == 4.5  # between c4 (runs 8, 9) and c5 (10, 11), categories' positions


def test_point_mode_and_short_text() -> None:
    assert mode({"direct": 1, "uncached": 0}) == "direct" and mode({"uncached": 1}) == "uncached"
    assert mode({"direct": 0}) == "buffered" and mode({"kind": "create"}) == ""
    assert point_text({"rw": "write", "direct": 0, "jobs": 2}) == "jobs=2 rw=write"
    assert short("v" * 5000, 90) == "v" * 89 + "…" and short("abc", 90) == "abc"


def test_other_modes_prefer_the_runs_own_generator() -> None:
    """limits measures uncached with iowall-engine (kind=stream) where fio cannot: a fio run
    finds it there, but finds buffered by fio, not by the engine's agreement runs."""

    def run(rid: int, kind: str, direct: int = 0, uncached: int = 0, jobs: int = 2) -> Run:
        p = {
            "kind": kind,
            "rw": "write",
            "direct": direct,
            "jobs": jobs,
            "end_fsync": int(not direct),
            **({"uncached": 1} if uncached else {}),
        }
        return Run(Point("limits", p), "l", "ok", 0, 1, id=rid)

    batch = [
        run(1, "fio"),
        run(2, "stream"),
        run(3, "fio", direct=1),
        run(4, "fio", direct=1),
        run(5, "stream", uncached=1),
        run(6, "fio", direct=1, jobs=4),
    ]
    assert other_modes(batch[0], batch) == [
        {"mode": "direct", "run": 3, "n": 2, "ids": "3-4"},
        {"mode": "uncached", "run": 5, "n": 1, "ids": "5"},
    ]
    assert [o["run"] for o in other_modes(batch[2], batch)] == [1, 5]
    assert other_modes(Run(Point("meta", {"threads": 2}), "l", "ok", 0, 1, id=9), batch) == []


def test_runs_page_says_more_than_the_bound_it_counts_to() -> None:
    env = templates()
    env.globals["asset"] = lambda name: name
    for total, said in (
        (3, "3 runs match"),
        (COUNTED, f"{COUNTED} runs match"),
        (COUNTED + 1, "more than 10,000"),
    ):
        rows = run_rows(RunPage((), None, total))
        html = env.get_template("runs.html").render(rows=rows, filters={}, labels=[], params={}, plots=False)
        assert said in html, (total, html[html.find('id="count"') :][:120])
