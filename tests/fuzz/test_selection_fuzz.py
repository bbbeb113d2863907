"""Fuzz run selections (10,000 of them: labels, FIELD=V lists, ids and ranges, bundle files
with filters, raw text) through ``compare``, ``history``, ``gate --baseline`` and ``export``:
never a traceback, one error line for a rejected selection, the store never written and no
file made in the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iowall.actions.selection import FIELDS

from . import stored_runs
from .harness import EXAMPLES, FUZZ, Tally, check_no_traceback, check_rejected, invoke, row_counts
from .mutate import EDGE_TEXT

pytestmark = pytest.mark.fuzz


values = st.one_of(
    st.sampled_from(
        [
            "base",
            "patched",
            "plan:fuzz",
            "ok",
            "failed",
            "6.18",
            "6.18.0-p1",
            "box",
            "cbase",
            "batch-base",
            "",
            " ",
            "=",
            ",",
            ":",
            ".json",
            "1-3",
        ]
    ),
    st.sampled_from(EDGE_TEXT),
    st.text(max_size=8),
)
id_parts = st.one_of(
    st.integers(-3, 20).map(str),
    st.tuples(st.integers(-3, 20), st.integers(-3, 20)).map(lambda t: f"{t[0]}-{t[1]}"),
    st.sampled_from(
        ["1-99999999999", "0-40000", "99999999999999999999", "1--2", "-", "", "x", "1-", "٣", "1_000", " 2 "]
    ),
)
ids = st.lists(id_parts, min_size=1, max_size=4).map(",".join)
terms = st.one_of(
    st.tuples(st.sampled_from([*FIELDS, "nope", "Label", ""]), values).map("=".join),
    ids.map(lambda s: f"ids={s}"),
)
filters = st.lists(terms, min_size=1, max_size=3).map(",".join)


@st.composite
def selections(draw: st.DrawFn, bundle: str) -> str:
    kind = draw(st.sampled_from(["label", "filter", "ids", "bundle", "bundle+filter", "raw"]))
    if kind == "label":
        return draw(values)
    if kind == "filter":
        return draw(filters)
    if kind == "ids":
        return draw(ids)
    if kind == "raw":
        return draw(st.text(max_size=30))
    path = draw(st.sampled_from([bundle, "missing.json", "/", bundle + "x", bundle[:-5]]))
    if kind == "bundle":
        return path
    return f"{path}:{draw(filters)}"


def test_selection_parser_fuzz(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"  # nothing may appear here (a selection read as a store path did)
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    db = tmp_path / "s.db"
    url = stored_runs.build(db)
    bundle = tmp_path / "runs.json"
    stored_runs.export(url, bundle)
    out = tmp_path / "out.json"
    before = row_counts(db)
    tally = Tally("selection")

    @FUZZ
    @given(st.data(), st.sampled_from(["compare", "history", "gate", "export"]))
    def one(data: st.DataObject, command: str) -> None:
        sel = data.draw(selections(str(bundle)), label="selection")
        other = data.draw(
            st.one_of(st.just("base"), st.just("patched"), selections(str(bundle))), label="other"
        )
        argv = {
            "compare": ["compare", sel, other],
            "history": ["history", sel],
            "gate": ["gate", "label=patched", "--baseline", sel],
            "export": ["export", sel, "-o", str(out)],
        }[command]
        o = invoke([*argv, "--db", f"sqlite:///{db}"])
        check_no_traceback(o)
        accepted = o.rc == 0 or (command == "gate" and o.rc in (1, 3))
        if not accepted:
            check_rejected(o)
        assert row_counts(db) == before, o
        assert not any(cwd.iterdir()), (o, list(cwd.iterdir()))
        tally.add(accepted, command)

    one()
    tally.report(tmp_path_factory.getbasetemp())
    assert tally.tried >= EXAMPLES and tally.accepted and tally.rejected
