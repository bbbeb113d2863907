"""`iowall export` / `iowall import` as a user runs them: selections, idempotent import, dry
run, stdout, old bundles migrated, newer and malformed bundles refused with exit 2."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowall.store import Store
from tests.conftest import iowall
from tests.unit.test_bundle import V1_DOC, fill

pytestmark = pytest.mark.beside  # measures nothing: phase 1 of make test


def _other(tmp_path: Path, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    url = f"sqlite:///{tmp_path / 'other.db'}"
    return url, {**env, "IOWALL_DB": url}


def test_export_import_round_trip(tmp_path: Path, db_url: str, iowall_env: dict[str, str]) -> None:
    src = fill(db_url)
    out = tmp_path / "all.json"
    cp = iowall("export", "-o", str(out), env=iowall_env, check=True)
    assert cp.stderr.splitlines() == [f"wrote {out}: 4 runs (2 labels, 2 kernels)"]
    assert cp.stdout == ""

    url, env2 = _other(tmp_path, iowall_env)
    cp = iowall("import", "--dry-run", str(out), env=env2, check=True)
    assert cp.stdout.splitlines()[-1] == "would import 4 runs, 0 already present"
    assert sum(line.startswith("import ") for line in cp.stdout.splitlines()) == 4
    assert Store(url).count() == 0

    cp = iowall("import", str(out), env=env2, check=True)
    assert cp.stdout.strip() == "imported 4 runs, 0 already present"
    cp = iowall("import", str(out), env=env2, check=True)
    assert cp.stdout.strip() == "imported 0 runs, 4 already present"
    dst = Store(url)
    assert dst.count() == 4
    for a in src.runs():
        (got,) = [r for r in dst.runs() if r.uuid == a.uuid]
        full_a, full_b = src.get_run(a.id or 0), dst.get_run(got.id or 0)
        assert (
            full_a.metrics,
            full_a.env,
            full_a.bed,
            full_a.series,
            full_a.artifacts,
            full_a.notes,
            full_a.label,
            full_a.point,
            full_a.status,
            full_a.fingerprint(),
        ) == (
            full_b.metrics,
            full_b.env,
            full_b.bed,
            full_b.series,
            full_b.artifacts,
            full_b.notes,
            full_b.label,
            full_b.point,
            full_b.status,
            full_b.fingerprint(),
        )

    cp = iowall("import", "--dry-run", str(out), env=env2, check=True)
    assert cp.stdout.splitlines()[-1] == "would import 0 runs, 4 already present"


def test_export_selection_writes_only_those(tmp_path: Path, db_url: str, iowall_env: dict[str, str]) -> None:
    fill(db_url)
    out = tmp_path / "p.json"
    cp = iowall("export", "patched", "--measured-only", "-o", str(out), env=iowall_env, check=True)
    assert cp.stderr.strip() == f"wrote {out}: 1 run (1 label, 1 kernel)"
    doc = json.loads(out.read_text())
    assert [(r["label"], r["source_id"], r["status"]) for r in doc["runs"]] == [("patched", 3, "ok")]
    assert [a["name"] for a in doc["runs"][0]["artifacts"]] == ["fio.json", "notes.txt"]

    # (kernel= selects by release prefix: 6.18.0 alone would take 6.18.0-p too)
    cp = iowall("export", "1,4", "kernel=6.18.0,label=base", "-o", "-", env=iowall_env, check=True)
    assert [r["source_id"] for r in json.loads(cp.stdout)["runs"]] == [1, 4, 2]
    assert cp.stderr.strip() == "iowall: exported 3 runs (2 labels, 2 kernels) to stdout"

    # a bundle can be narrowed and re-exported without a store
    sub = tmp_path / "sub.json"
    iowall("export", f"{tmp_path / 'p.json'}:ids=3", "-o", str(sub), env=iowall_env, check=True)
    assert json.loads(sub.read_text())["runs"] == doc["runs"]

    cp = iowall("export", "nosuchlabel", "-o", str(tmp_path / "n.json"), env=iowall_env)
    assert cp.returncode == 2 and "matches no completed runs" in cp.stderr
    assert not (tmp_path / "n.json").exists()


def test_v1_bundle_imports(tmp_path: Path, iowall_env: dict[str, str], db_url: str) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(V1_DOC))
    cp = iowall("import", str(old), env=iowall_env, check=True)
    assert cp.stdout.strip() == "imported 1 run, 0 already present"
    (run,) = Store(db_url).runs()
    assert run.uuid == V1_DOC["runs"][0]["uuid"] and run.metric("wall_s") == 30.0


def test_newer_version_refused(tmp_path: Path, iowall_env: dict[str, str], db_url: str) -> None:
    doc = copy.deepcopy(V1_DOC)
    doc["schema_version"] = 7
    f = tmp_path / "future.json"
    f.write_text(json.dumps(doc))
    cp = iowall("import", str(f), env=iowall_env)
    assert cp.returncode == 2
    assert cp.stderr == (
        f"iowall: error: bundle {f} has schema_version 7; this iowall reads up to 3: upgrade iowall\n"
    )
    assert Store(db_url).count() == 0


def test_malformed_files_exit_2_and_import_nothing(
    tmp_path: Path, iowall_env: dict[str, str], db_url: str
) -> None:
    fill(db_url)
    good = tmp_path / "good.json"
    iowall("export", "-o", str(good), env=iowall_env, check=True)
    bad_value = json.loads(good.read_text())
    bad_value["runs"][2]["metrics"][0]["value"] = "fast"
    cases = {
        "text.json": ("this is not json", "not JSON: Expecting value at line 1 column 1"),
        "list.json": ("[]", "not an iowall bundle"),
        "nokey.json": (json.dumps({"format": "iowall-bundle", "schema_version": 2}), "created_at: missing"),
        "value.json": (
            json.dumps(bad_value),
            "runs[2].metrics[0].value: input should be a valid number (got 'fast')",
        ),
    }
    _, env2 = _other(tmp_path, iowall_env)
    for name, (text, expect) in cases.items():
        f = tmp_path / name
        f.write_text(text)
        cp = iowall("import", str(good), str(f), env=env2)  # the good file is not imported either
        assert cp.returncode == 2, cp
        assert not (tmp_path / "other.db").exists(), "a failed import left the store it made"
        assert cp.stderr.startswith(f"iowall: error: bundle {f}") and expect in cp.stderr
        assert cp.stderr.count("\n") == 1
    cp = iowall("import", str(tmp_path / "missing.json"), env=env2)
    assert cp.returncode == 2 and cp.stderr.strip().endswith("missing.json: no such file")
    assert Store(env2["IOWALL_DB"]).count() == 0
    # a store that was there stays, as it was
    iowall("import", str(good), env=env2, check=True)
    cp = iowall("import", str(good), str(tmp_path / "value.json"), env=env2)
    assert cp.returncode == 2 and Store(env2["IOWALL_DB"]).count() == 4


def test_dry_run_makes_no_store(tmp_path: Path, db_url: str, iowall_env: dict[str, str]) -> None:
    fill(db_url)
    out = tmp_path / "all.json"
    iowall("export", "--packed", "-o", str(out), env=iowall_env, check=True)
    nowhere = tmp_path / "none.db"
    cp = iowall("import", "--dry-run", str(out), "--db", f"sqlite:///{nowhere}", env=iowall_env, check=True)
    assert cp.stdout.splitlines()[-1] == "would import 4 runs, 0 already present"
    assert not nowhere.exists()
    cp = iowall("import", "--dry-run", str(out), env=iowall_env, check=True)  # the store it came from
    assert cp.stdout.splitlines()[-1] == "would import 0 runs, 4 already present"


def test_ctrl_c_while_a_file_does_not_come_says_one_line_and_leaves_no_store(
    tmp_path: Path, db_url: str, iowall_env: dict[str, str]
) -> None:
    """Ctrl-C (SIGINT to the command's process group, as a terminal sends it) while a worker
    waits on a pipe that is never written: exit 130, the one line ``iowall: interrupted`` (no
    worker's traceback), and the store the import made removed."""
    fill(db_url)
    good = tmp_path / "good.json"
    iowall("export", "-o", str(good), env=iowall_env, check=True)
    fifo = tmp_path / "never.json"
    os.mkfifo(fifo)
    store = tmp_path / "new.db"
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    p = subprocess.Popen(
        [exe, "import", "--db", str(store), str(good), str(fifo)],
        env=iowall_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which the SIGINT goes to
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not ignored, as under a shell
    )
    try:
        deadline = time.monotonic() + 60
        while not store.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the store is opened while the workers read
        time.sleep(1.0)  # the first file written, the second waited for
        assert p.poll() is None, p.communicate()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert (p.returncode, err, out) == (130, "iowall: interrupted\n", "")
    assert not store.exists()
