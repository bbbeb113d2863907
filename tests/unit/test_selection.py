"""Run selections as written on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowall.errors import UserError
from iowall.model import Point, Run
from iowall.selection import matches, parse_selection


def test_forms() -> None:
    assert parse_selection("patched").flt.label == "patched"
    assert parse_selection("3-5,9").flt.ids == [3, 4, 5, 9]
    s = parse_selection("ids=1,4-5,kernel=6.18.44")
    assert s.flt.ids == [1, 4, 5] and s.flt.kernel == "6.18.44"
    assert parse_selection("host=a,recipe=limits").flt.host == "a"


def test_bundle_with_filter(tmp_path: Path) -> None:
    f = tmp_path / "b.json"
    f.write_text("{}")
    s = parse_selection(f"{f}:label=base")
    assert s.bundle == str(f) and s.flt.label == "base"
    r = Run(point=Point("x", {}), label="base", status="ok", started_at=0, finished_at=1, id=7,
            env={"kernel": "k", "host": {"hostname": "h"}})
    assert matches(r, s.flt) and matches(r, parse_selection("ids=7,host=h").flt)
    assert not matches(r, parse_selection("kernel=other").flt)


@pytest.mark.parametrize("text, needle", [("", "empty"), ("colour=red", "unknown field"),
                                          ("ids=x", "run ids"), ("ids=5-2", "run ids"),
                                          ("nofile.json", "no such file"),
                                          ("label=a,oops", "not FIELD=VALUE")])
def test_bad(text: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_selection(text)
