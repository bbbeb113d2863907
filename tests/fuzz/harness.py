"""The fuzzers' harness: the CLI run in-process with its output captured, the properties every
rejected input must have (exit 2, one ``iowall: error:`` line, no traceback), the store's row
counts, and the tally of inputs tried, accepted and rejected that each fuzzer reports."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iowall.cli.main import main

#: Inputs per fuzzer: 1,000 in `make test` (a fixed-seed budget: the suite's 25 minutes),
#: 10,000 in `make fuzz` (IOWALL_FUZZ_EXAMPLES=10000). The inputs are the same on every run of
#: one budget (derandomized: CI is repeatable); found cases are replayed always
#: (test_found.py).
EXAMPLES = int(os.environ.get("IOWALL_FUZZ_EXAMPLES", "1000"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)

#: Every fuzzer's tally, in the order they finished (printed at the end of the session).
TALLIES: list[Tally] = []


@dataclass(frozen=True)
class Outcome:
    """What one CLI invocation did."""

    argv: tuple[str, ...]
    rc: int
    out: str
    err: str


def invoke(argv: list[str]) -> Outcome:
    """``iowall ARGV`` in-process; an exception escaping ``main`` fails the test with the argv
    (that is a traceback a user would see)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main(argv)
        except BaseException as e:  # noqa: BLE001 - any escape is the bug being looked for
            raise AssertionError(f"iowall {argv!r} raised {type(e).__name__}: {e}") from e
    return Outcome(tuple(argv), rc, out.getvalue(), err.getvalue())


def check_no_traceback(o: Outcome) -> None:
    assert "Traceback" not in o.err and "Traceback" not in o.out, o


def check_rejected(o: Outcome) -> None:
    """A rejected input: exit 2 and exactly one line on stderr that says what is wrong."""
    check_no_traceback(o)
    assert o.rc == 2, o
    assert o.err.startswith("iowall: error: ") and o.err.count("\n") == 1 and o.err.endswith("\n"), o
    assert len(o.err.strip()) > len("iowall: error: ") + 5, o


def check_import(argv: list[str], db: Path, tally: Tally, how: str) -> None:
    """One import through the CLI: never a traceback; accepted, it adds the runs its last
    line counts (``imported N runs …``); rejected, one error line and the store unchanged."""
    before = row_counts(db)
    o = invoke(argv)
    check_no_traceback(o)
    after = row_counts(db)
    if o.rc == 0:
        assert o.err == "", o
        added = int(o.out.splitlines()[-1].split()[1])
        assert after["runs"] - before["runs"] == added, (o, before, after)
    else:
        check_rejected(o)
        assert after == before, (o, before, after)
    tally.add(o.rc == 0, how)


def fuzz_import(
    command: str, inputs: st.SearchStrategy[tuple[str, bytes]], tmp: Path, report_dir: Path, name: str
) -> Tally:
    """``EXAMPLES`` ``(how, bytes)`` inputs fed to ``iowall COMMAND FILE`` against a store that
    already holds runs (a rejected import must leave them alone), each checked by
    ``check_import``; the tally, reported."""
    from . import stored_runs  # it imports this module's invoke

    db = tmp / "dst.db"
    url = stored_runs.build(db)
    path = tmp / "in.json"
    tally = Tally(name)

    @FUZZ
    @given(inputs)
    def one(made: tuple[str, bytes]) -> None:
        how, data = made
        path.write_bytes(data)
        check_import([command, str(path), "--db", url], db, tally, how)

    one()
    tally.report(report_dir)
    assert tally.tried >= EXAMPLES and tally.accepted and tally.rejected
    return tally


def row_counts(db: Path) -> dict[str, int]:
    """Rows in every table of a SQLite store ({} when the file does not exist)."""
    if not db.exists():
        return {}
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


@dataclass
class Tally:
    """Inputs tried by one fuzzer, how many were accepted and rejected, and its run time."""

    name: str
    accepted: int = 0
    rejected: int = 0
    started: float = field(default_factory=time.monotonic)
    kinds: dict[str, int] = field(default_factory=dict)
    seconds: float | None = None

    def add(self, accepted: bool, kind: str = "") -> None:
        if accepted:
            self.accepted += 1
        else:
            self.rejected += 1
        if kind:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    @property
    def tried(self) -> int:
        return self.accepted + self.rejected

    def line(self) -> str:
        took = self.seconds if self.seconds is not None else time.monotonic() - self.started
        return (
            f"fuzz {self.name}: {self.tried} inputs tried, {self.accepted} accepted, "
            f"{self.rejected} rejected, {took:.1f} s"
        )

    def report(self, out_dir: Path) -> str:
        """Print the counts and write them to ``out_dir/fuzz-NAME.json``; the line printed."""
        self.seconds = time.monotonic() - self.started
        line = self.line()
        (out_dir / f"fuzz-{self.name}.json").write_text(
            json.dumps(
                {
                    "name": self.name,
                    "tried": self.tried,
                    "accepted": self.accepted,
                    "rejected": self.rejected,
                    "seconds": round(self.seconds, 1),
                    "kinds": self.kinds,
                },
                indent=1,
            )
            + "\n"
        )
        print(line)
        TALLIES.append(self)
        return line
