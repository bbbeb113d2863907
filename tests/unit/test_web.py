"""The dashboard's pure parts: run ids as a selection, dates, bundle refusal, the segments a
history is cut into at its change points, figures without NaN, loopback detection."""

from __future__ import annotations

import json
import math

import pytest

from iowall.analysis.history import from_rows
from iowall.cli.serve import loopback
from iowall.errors import UserError
from iowall.web.figures import history_figure, segments
from iowall.web.pages import clean
from iowall.web.queries import day, ids_text, selected


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
            selected(None, text)  # type: ignore[arg-type]


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
    assert json.loads(json.dumps(fig, allow_nan=False)) == {"data": [{"y": [1.0, None, None]}],
                                                           "n": [2, None]}


def test_loopback() -> None:
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost")
    assert not loopback("0.0.0.0")
