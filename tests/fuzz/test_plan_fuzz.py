"""Fuzz the plan loader through ``iowall run PLAN --dry-run`` (1,000 plan files in `make test`,
10,000 in `make fuzz`: mutated seeds, edited TOML text, raw text and bytes), then replay a
few hundred of the rejected ones through the real ``iowall run``: they fail at load, before
the store, a lock or a bed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import given
from hypothesis import strategies as st

import iowall.actions.target
import iowall.beds.xfs_blocks
import iowall.cli.run
import iowall.plan.execute
from iowall.model import Metric, Point, Run
from iowall.store import Store

from .harness import EXAMPLES, FUZZ, Tally, check_no_traceback, check_rejected, invoke, row_counts
from .plan_inputs import KEYS, plan_files

pytestmark = pytest.mark.fuzz

#: How many rejected plans go through the real ``iowall run`` afterwards.
REAL_RUNS = 300
JOB = "[global]\nrw=write\nbs=1M\nsize=64M\n[job1]\n"

extras = st.lists(
    st.one_of(
        st.tuples(
            st.just("--set"),
            st.builds(
                lambda k, v: f"{k}={v}",
                st.sampled_from(KEYS),
                st.sampled_from(
                    ["1,2", "4k,1M", "", "0", "x,x", '["a,b", 1]', "[", "5,10", "true", "-1", "1.5"]
                ),
            ),
        ),
        st.tuples(st.just("--repeat"), st.sampled_from(["1", "auto", "auto:3", "0", "x"])),
        st.tuples(st.just("--target"), st.sampled_from(["2%", "0", "150%", "nan"])),
        st.tuples(st.just("--label"), st.sampled_from(["base", ""])),
        st.tuples(st.just("--bed"), st.sampled_from(["tmpfs", "loop", "zram", "nfs:x"])),
        st.tuples(st.just("--probes"), st.sampled_from(["none", "cpu,vmstat", "bogus"])),
        st.tuples(st.just("--format"), st.sampled_from(["json", "md", "xml"])),
        st.just(("--quick",)),
    ),
    max_size=2,
).map(lambda xs: [a for x in xs for a in x])


class Touched(Exception):
    """Something a rejected plan (or a dry run) must never reach was reached."""


def _forbid(what: str) -> Any:
    def refuse(*_a: object, **_k: object) -> NoReturn:
        raise Touched(f"{what} was reached")

    return refuse


def _key(err: str) -> str:
    """An error line without the file name, to keep one rejected plan per kind of error."""
    return err.split(": ", 2)[-1][:50]


def test_plan_loader_fuzz(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mine.fio").write_text(JOB)
    path = tmp_path / "fuzz.toml"
    db = tmp_path / "never.db"
    for mod, name in (
        (iowall.cli.run, "Store"),
        (iowall.actions.target, "exclusive"),
        (iowall.actions.target.journal, "recover"),
        (iowall.plan.execute, "provision"),
        (iowall.plan.execute, "fio_dontcache_ok"),
        (iowall.beds.xfs_blocks, "provision"),
    ):
        monkeypatch.setattr(mod, name, _forbid(f"{mod.__name__}.{name}"))
    tally = Tally("plan")
    rejected: dict[str, bytes] = {}
    spare: list[bytes] = []

    @FUZZ
    @given(plan_files(), extras)
    def one(made: tuple[str, bytes], extra: list[str]) -> None:
        how, data = made
        path.write_bytes(data)
        o = invoke(["run", str(path), "--dry-run", "--db", f"sqlite:///{db}", *extra])
        check_no_traceback(o)
        assert not db.exists(), "a dry run opened the store"
        if o.rc == 0:
            assert o.err == "", o
            fmt = next(
                (extra[i + 1] for i in range(len(extra) - 1, -1, -1) if extra[i] == "--format"), "text"
            )
            if fmt == "json":
                doc = json.loads(o.out)
                assert doc["dry_run"] is True and doc["runs"] == len(doc["points"]) * (
                    doc["plan"]["repeat"]
                    if isinstance(doc["plan"]["repeat"], int)
                    else int(doc["plan"]["repeat"].split(":")[1])
                )
            elif fmt == "text":
                assert o.out.splitlines()[0].endswith(": dry run"), o
        else:
            check_rejected(o)
            if not extra:
                if _key(o.err) not in rejected:
                    rejected[_key(o.err)] = data
                elif len(spare) < REAL_RUNS:
                    spare.append(data)
        tally.add(o.rc == 0, how)

    one()
    tally.report(tmp_path_factory.getbasetemp())
    assert tally.tried >= EXAMPLES and tally.accepted and tally.rejected

    # The rejected plans through the real `iowall run`: the same one line, and nothing else.
    monkeypatch.undo()
    for mod, name in (
        (iowall.actions.target, "exclusive"),
        (iowall.actions.target.journal, "recover"),
        (iowall.plan.execute, "provision"),
        (iowall.beds.xfs_blocks, "provision"),
    ):
        monkeypatch.setattr(mod, name, _forbid(f"{mod.__name__}.{name}"))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    Store(url).add_run(
        Run(
            point=Point("limits", {"jobs": 1}),
            label="kept",
            status="ok",
            started_at=1.7e9,
            finished_at=1.7e9 + 1,
            metrics=(Metric("write_bw_bytes_per_s", 1e9, "B/s"),),
        )
    )
    before = row_counts(tmp_path / "store.db")
    plans = (list(rejected.values()) + spare)[:REAL_RUNS]
    real = Tally("plan-real-run")
    for data in plans:
        path.write_bytes(data)
        dry = invoke(["run", str(path), "--dry-run"])
        o = invoke(["run", str(path), "--db", url])
        check_rejected(o)
        assert o.err == dry.err
        assert row_counts(tmp_path / "store.db") == before
        real.add(False)
    real.report(tmp_path_factory.getbasetemp())
    assert real.tried >= min(REAL_RUNS, tally.rejected)
