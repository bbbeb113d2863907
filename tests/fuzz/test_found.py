"""The inputs the fuzzers found bugs with, each kept as a plain regression test: every one is
now one error line (exit 2) instead of a traceback, a hang or a two-line message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..unit.test_bundle import V1_DOC
from .harness import check_rejected, invoke

pytestmark = pytest.mark.fuzz

PLAN = '[workload]\nrw = "write"\nsize = "256M"\n'


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('"\\n" = ""\n', 'key "\\n": unknown key'),
        ("[axes]\njobs = [" + "1" * 400 + "]\n", "must be at most 2147483647"),
        ('[bed]\nsize = "' + "1" * 400 + 'k"\n', "cannot read"),
        (
            "[axes]\njobs = "
            + str(list(range(1, 301)))
            + "\niodepth = "
            + str(list(range(1, 301)))
            + "\nnrfiles = "
            + str(list(range(1, 41)))
            + "\n",
            "make 3600000 points",
        ),
    ],
    ids=["newline-key", "huge-jobs", "huge-size", "huge-product"],
)
def test_plans_found(tmp_path: Path, extra: str, says: str) -> None:
    p = tmp_path / "p.toml"
    p.write_text(
        PLAN.replace("[workload]", extra + "[workload]") if not extra.startswith("[") else PLAN + extra
    )
    o = invoke(["run", str(p), "--dry-run"])
    check_rejected(o)
    assert says in o.err


def test_bundle_key_with_newline(tmp_path: Path, db_url: str) -> None:
    p = tmp_path / "b.json"
    p.write_text(json.dumps({**V1_DOC, "\n": 0}))
    o = invoke(["import", str(p), "--db", db_url])
    check_rejected(o)
    assert '["\\n"]: unknown key' in o.err


@pytest.mark.parametrize("sel", ["99999999999999999999", "1-99999999999", "ids=0-40000"])
def test_selection_ids_found(sel: str, db_url: str) -> None:
    check_rejected(invoke(["compare", sel, "base", "--db", db_url]))
