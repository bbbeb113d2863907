"""iowall.workloads.engine: the Python side runs the binary and turns its JSON into results."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowall.vocab.errors import EngineError, UserError
from iowall.workloads import engine as eng


def test_engine_path_is_the_packaged_binary(engine: str) -> None:
    assert Path(eng.engine_path()).resolve() == Path(engine).resolve()


def test_run_memcopy() -> None:
    rec = eng.run_memcopy(2, 1 << 20, passes=2, method="best", loops=2)
    assert rec["threads"] == 2 and rec["passes"] == 2
    assert len(rec["per_thread_bytes_per_s"]) == 2
    assert rec["total_bytes_per_s"] > 0


def test_run_meta(scratch: Path) -> None:
    recs = eng.run_meta(scratch / "m", 2, 300, ["create", "walk"], dirs_per_thread=2, size=10)
    assert [r["phase"] for r in recs] == ["create", "walk"]
    assert recs[1]["bytes"] == 600 * 10
    recs = eng.run_meta(scratch / "m", 2, 300, "chmod,unlink", dirs_per_thread=2, chmod_mode=0o600)
    assert [r["files"] for r in recs] == [600, 600]
    assert list((scratch / "m").iterdir()) == []


def test_run_meta_shared(scratch: Path) -> None:
    recs = eng.run_meta(scratch / "m", 2, 100, "create,walk,unlink", shared_dir=True)
    assert all(r["shared_dir"] and r["files"] == 200 for r in recs)


def test_run_smallfiles(scratch: Path) -> None:
    rec = eng.run_smallfiles(scratch / "s", 2, 512, files=123)
    assert rec["files"] == 123 and sum(rec["per_second"]) == 123


def test_engine_error_carries_the_record(scratch: Path) -> None:
    eng.run_meta(scratch, 1, 10, "create")
    with pytest.raises(eng.EngineRunError) as ei:
        eng.run_meta(scratch, 1, 10, "create")
    e = ei.value
    assert isinstance(e, EngineError)
    assert e.errno_name == "EEXIST"
    assert e.record["phase"] == "create"
    assert "File exists" in str(e) and str(scratch / "t000") in str(e)


def test_enospc_keeps_partial_counts(mount_tmpfs) -> None:
    mnt = mount_tmpfs("size=1m")
    with pytest.raises(eng.EngineRunError) as ei:
        eng.run_smallfiles(mnt, 2, 4096, seconds=10)
    assert ei.value.errno_name == "ENOSPC"
    assert ei.value.record["status"] == "filled"
    assert ei.value.record["files"] > 0


def test_bad_values_are_user_errors(scratch: Path) -> None:
    with pytest.raises(UserError, match="threads"):
        eng.run_meta(scratch, 0, 10, "create")
    with pytest.raises(UserError, match="phase"):
        eng.run_meta(scratch, 1, 10, "create,mkdir")
    with pytest.raises(UserError, match="seconds=, files= or both"):
        eng.run_smallfiles(scratch, 1)
    with pytest.raises(UserError):
        eng.run_memcopy(1, 1024, method="avx")


def test_parse_output_rejects_non_json() -> None:
    with pytest.raises(EngineError, match="not JSON"):
        eng.parse_output('{"a": 1}\nhello\n')
    assert eng.parse_output('{"a": 1}\n\n{"b": 2}\n') == [{"a": 1}, {"b": 2}]


def test_missing_binary_is_a_clear_user_error(monkeypatch: pytest.MonkeyPatch, scratch: Path) -> None:
    fake = scratch / "iowall" / "workloads" / "engine.py"
    monkeypatch.setattr(eng, "__file__", str(fake))
    with pytest.raises(UserError, match="iowall-engine is missing"):
        eng.engine_path()
