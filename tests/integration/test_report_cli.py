"""`iowall report BATCH` prints a stored report again, as `run` printed it; `run` takes
`--probes` (the default probes are on for plans) and `-o`."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]


def plan(tmp_path: Path, probes: str = "") -> str:
    p = tmp_path / "tiny.toml"
    p.write_text(
        textwrap.dedent(f"""\
        label = "tiny"
        repeat = 1
        {probes}
        [workload]
        kind = "fio"
        rw = "write"
        bs = "1M"
        size = "16M"
        [axes]
        jobs = [1, 2]
        """)
    )
    return str(p)


def test_report_reprints_what_run_printed(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    out = tmp_path / "first.txt"
    cp = iowall("run", plan(tmp_path), "-o", str(out), env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "" and f"wrote {out}" in cp.stderr
    first = out.read_text()
    batch = first.split("batch ")[1].split()[0]
    again = iowall("report", batch, env=iowall_env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first
    prefix = iowall("report", batch[:8], "--format", "md", env=iowall_env)
    assert prefix.returncode == 0 and prefix.stdout.startswith("# plan:tiny")
    doc = json.loads(iowall("report", batch, "--format", "json", env=iowall_env).stdout)
    assert doc["schema_version"] == 1 and doc["kind"] == "plan" and doc["batch"] == batch
    assert len(doc["run_ids"]) == 2 and doc["table"] and doc["explain"]
    # the default probes ran around every point of the plan, so the Why section has data
    runs = Store(iowall_env["IOWALL_DB"]).runs(RunFilter(batch=batch), with_series=True)
    assert all(r.series and r.metric("cpu_kernel_share") is not None for r in runs)


def test_probes_none_and_bad_input(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    cp = iowall("run", plan(tmp_path), "--probes", "none", "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    runs = Store(iowall_env["IOWALL_DB"]).runs(RunFilter(batch=doc["batch"]), with_series=True)
    assert runs and not any(s.probe != "fio" for r in runs for s in r.series)
    for args, says in (
        (("run", plan(tmp_path), "--probes", "cpu,nope"), "unknown probe"),
        (("report", "no-such-batch"), "no report stored"),
        (("report", plan(tmp_path), "--format", "xml"), "xml"),
    ):
        bad = iowall(*args, env=iowall_env)
        assert bad.returncode == 2 and says in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
