"""Checks before costs (issue 26): every argument, plan key and bed is refused before anything
expensive or global happens (a store, the machine lock, guest memory), and the small things
the commands said wrong: `show --raw` of a compressed artifact, `doctor`'s disk line, a run's
profile decoded more than once. `limits` is checked and run as every recipe is
(``actions.target``), not by a second path of its own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

import iowall.actions.target
import iowall.analysis.explain.kernel_paths
import iowall.cli.limits
import iowall.cli.run
import iowall.recipes.limits
import iowall.recipes.limits.run
from iowall.actions.doctor import checks
from iowall.actions.target import Target
from iowall.cli.main import main
from iowall.measure.repeat import parse_repeat
from iowall.model import GZIP_BASE64, PROFILE_ARTIFACT, Artifact, Metric, Point, Run
from iowall.plan import load_plan
from iowall.probes.profile import encode_folded
from iowall.recipes.limits.options import LimitsOptions, limits_options
from iowall.results import Report
from iowall.store import Store
from iowall.store.reports import get_report
from iowall.vocab.errors import PlanError, UserError
from iowall.vocab.progress import Progress


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Private data and state directories and store."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("IOWALL_DB", f"sqlite:///{tmp_path / 'iowall.db'}")
    return tmp_path


def _forbid(name: str) -> Any:
    def no(*_a: object, **_k: object) -> None:
        raise AssertionError(f"{name} ran before the input was checked")

    return no


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_limits_refuses_a_missing_dir_bed_first(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # it took 35 s to refuse: the guest memory was touched before the bed was looked at
    for mod, name in (
        (iowall.cli.limits, "Store"),
        (iowall.actions.target, "exclusive"),
        (iowall.recipes.limits.run, "hold_memory_step"),
    ):
        monkeypatch.setattr(mod, name, _forbid(name))
    rc, out, err = _run(capsys, "limits", "--bed", f"dir:{home}/nonexistent/x")
    assert (rc, out) == (2, "")
    assert err == f"iowall: error: --bed dir:{home}/nonexistent/x: no such directory\n"


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--size", "8Q"], "--size: cannot read '8Q' as a size"),
        (["--jobs", "1,0"], "--jobs '1,0': job counts must be at least 1"),
        (["--fs-block", "3k"], "--fs-block 3k: XFS block sizes are powers of two"),
        (["--fs", "zfs"], "unknown filesystem 'zfs'"),
        (["--bed", "tmpfs", "--fs", "ext4"], "--fs ext4 does not apply to a tmpfs bed"),
        (["--bed", "device:/dev/a,/dev/b"], "a filesystem bed takes one device"),
    ],
)
def test_a_bad_limits_flag_is_refused_before_the_store(
    flags: list[str],
    said: str,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for mod, name in (
        (iowall.cli.limits, "Store"),
        (iowall.cli.limits, "execute"),
        (iowall.actions.target, "exclusive"),
        (iowall.recipes.limits.run, "hold_memory_step"),
    ):
        monkeypatch.setattr(mod, name, _forbid(name))
    rc, out, err = _run(capsys, "limits", *flags)
    assert (rc, out) == (2, "") and err.count("\n") == 1 and said in err, err
    assert not (home / "iowall.db").exists()


def test_limits_is_the_limits_recipe_run_by_execute(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`iowall limits` took the lock, recovered the journal and called ``run_limits`` itself,
    beside `run RECIPE`'s path: now it prepares the limits recipe with its flags' options and
    runs it through ``actions.target.execute``, which holds the lock under the same name and
    leaves guest memory to the recipe; the report is stored and printed as before."""
    assert iowall.cli.limits.execute is iowall.actions.target.execute
    seen: dict[str, Any] = {}
    real = iowall.actions.target.execute

    def execute(t: Target, store: Store, progress: Any, wait: float | None, hold_memory: bool) -> Report:
        seen.update(target=t, wait=wait, hold=hold_memory)
        return real(t, store, progress, wait, hold_memory)

    @contextmanager
    def lock(what: str, wait: float | None = None) -> Iterator[None]:
        seen["lock"] = (what, wait)
        yield

    def shown(title: str) -> Progress:
        seen.setdefault("titles", []).append(title)
        return Progress()

    def run_limits(opts: LimitsOptions, store: Store, progress: Progress) -> Report:
        seen["opts"] = opts
        return Report("limits", "limits", "iowall limits — bed ram: xfs", label=opts.label, batch="b-lim")

    monkeypatch.setattr(iowall.cli.limits, "execute", execute)
    monkeypatch.setattr(iowall.cli.limits, "RichProgress", shown)
    monkeypatch.setattr(iowall.actions.target, "exclusive", lock)
    monkeypatch.setattr(iowall.actions.target.journal, "recover", lambda: None)
    monkeypatch.setattr(iowall.actions.target, "hold_memory_step", _forbid("hold_memory_step"))
    monkeypatch.setattr(iowall.recipes.limits, "run_limits", run_limits)
    flags = ["--size", "8G", "--jobs", "4,1,2", "--fs-block", "16k,4k", "--repeat", "3", "--quick"]
    flags += ["--label", "lbl", "--mkfs-opts", "-m crc=1", "--mount-opts", "noatime", "--probes", "none"]
    rc, out, err = _run(capsys, "limits", *flags, "--wait", "5", "--no-hold-memory")
    assert rc == 0, err
    t = seen["target"]
    assert t.recipe is not None and t.recipe.name == "limits" and t.plan is None
    assert (seen["wait"], seen["hold"], seen["lock"]) == (5.0, False, ("limits", 5.0))
    assert seen["titles"] == ["limits"]  # the progress title, as before
    assert seen["opts"] == limits_options(
        size="8G",
        jobs="4,1,2",
        fs_block="16k,4k",
        repeat=parse_repeat("3"),
        quick=True,
        label="lbl",
        mkfs_opts="-m crc=1",
        mount_opts="noatime",
        probes="none",
        hold_memory=False,
    )
    assert out.startswith("iowall limits — bed ram: xfs")
    assert get_report(Store(), "b-lim").label == "lbl"


def test_run_limits_still_reads_its_sets(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`iowall run limits --set …` builds the same options from its axes, named as ``--set``."""
    seen: dict[str, LimitsOptions] = {}

    def run_limits(opts: LimitsOptions, *_a: object) -> Report:
        seen["opts"] = opts
        return Report("limits", "limits", "limits")

    monkeypatch.setattr(iowall.recipes.limits, "run_limits", run_limits)
    t = iowall.actions.target.prepare(
        "limits", sets=[("bed_size", ["8G"]), ("jobs", [2, 1]), ("fs", ["ext4"])], quick=True
    )
    assert t.opts.limits is None and t.command is None
    assert t.recipe is not None
    t.recipe.run(t.opts, cast(Store, None), Progress())
    assert seen["opts"] == limits_options(fs="ext4", size="8G", jobs="2,1", quick=True)
    with pytest.raises(UserError, match=r"^--set jobs '0': job counts must be at least 1"):
        iowall.actions.target.prepare("limits", sets=[("jobs", [0])])


@pytest.mark.parametrize(
    "bad, said",
    [
        ("bogus=1", "recipe buffered-wall has no axis 'bogus'"),
        ("variant=sideways", "--set variant= takes normal or fill"),
        ("direct=2", "--set direct= takes 0 and/or 1"),
    ],
)
def test_a_bad_set_on_a_recipe_is_refused_before_the_lock(
    bad: str, said: str, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # with the lock held by another measurement, it was reported as that
    def held(*_a: object, **_k: object) -> None:
        raise UserError("another measurement is running")

    monkeypatch.setattr(iowall.actions.target, "exclusive", held)
    monkeypatch.setattr(iowall.cli.run, "Store", _forbid("Store"))
    rc, _, err = _run(capsys, "run", "buffered-wall", "--set", bad)
    assert rc == 2 and err.count("\n") == 1 and said in err, err


def test_a_recipes_missing_dir_bed_is_refused_before_the_lock(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(iowall.actions.target, "exclusive", _forbid("exclusive"))
    monkeypatch.setattr(iowall.cli.run, "Store", _forbid("Store"))
    rc, _, err = _run(capsys, "run", "buffered-wall", "--bed", f"dir:{home}/gone")
    assert (rc, err) == (2, f"iowall: error: --bed dir:{home}/gone: no such directory\n")


def test_a_plan_names_its_device_bed(tmp_path: Path) -> None:
    plan = tmp_path / "dev.toml"
    plan.write_text('[workload]\nrw = "write"\nsize = "16M"\n[bed]\nkind = "device:/dev/sdz"\n')
    p = load_plan(plan)
    assert p.bed.kind == "device:/dev/sdz"
    # --wipe on the command line is for the plan's own device bed; --bed replaces it
    assert p.with_overrides(wipe=True).bed.kind == "device+wipe:/dev/sdz"
    assert p.with_overrides(bed="ram").bed.kind == "ram"
    plan.write_text('[workload]\nrw = "write"\nsize = "16M"\n[bed]\nkind = "device+wipe:/dev/sdz"\n')
    with pytest.raises(
        PlanError, match="a plan file cannot wipe a device: name it device:/dev/sdz and pass --wipe"
    ):
        load_plan(plan)
    plan.write_text('[workload]\nrw = "write"\nsize = "16M"\n')
    with pytest.raises(UserError, match="--wipe applies to --bed device:/dev/X only"):
        load_plan(plan).with_overrides(wipe=True)


def _profiled(url: str) -> int:
    return Store(url).add_run(
        Run(
            point=Point("plan:x", {"rw": "write", "jobs": 1}),
            label="p",
            status="ok",
            started_at=1.7e9,
            finished_at=1.7e9 + 10,
            metrics=(Metric("write_bw_bytes_per_s", 1e9, "B/s"),),
            artifacts=(
                Artifact(PROFILE_ARTIFACT, GZIP_BASE64, encode_folded({"fio;vfs_write;copy_user": 7})),
            ),
        )
    )


def test_show_raw_prints_a_compressed_artifact_as_its_text(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = _profiled(f"sqlite:///{home / 'iowall.db'}")
    rc, out, _ = _run(capsys, "show", str(rid), "--raw", PROFILE_ARTIFACT)
    assert (rc, out) == (0, "fio;vfs_write;copy_user 7\n")
    rc, _, _ = _run(capsys, "show", str(rid), "--raw", PROFILE_ARTIFACT, "-o", str(home / "p.folded"))
    assert rc == 0 and (home / "p.folded").read_text() == "fio;vfs_write;copy_user 7\n"


def test_a_runs_profile_is_decoded_once(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = _profiled(f"sqlite:///{home / 'iowall.db'}")
    calls: list[str] = []
    real = iowall.analysis.explain.kernel_paths.decode_folded

    def counted(body: str) -> dict[str, int]:
        calls.append(body)
        return real(body)

    monkeypatch.setattr(iowall.analysis.explain.kernel_paths, "decode_folded", counted)
    rc, out, _ = _run(capsys, "explain", str(rid))
    assert rc == 0 and "copy" in out
    assert len(calls) == 1


def _disk(db: str | None = None) -> str:
    (disk,) = [c for c in checks(db) if c.name == "disk"]
    return disk.detail


def test_doctors_disk_line_follows_the_store(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "stores").mkdir()
    monkeypatch.setenv("IOWALL_DB", str(home / "stores" / "new" / "iowall.db"))
    assert _disk().endswith(f"free in {home / 'stores'} (the store's directory)")
    assert _disk(f"sqlite:///{home}/x.db").endswith(f"free in {home} (the store's directory)")
    monkeypatch.setenv("IOWALL_DB", "postgresql://me:secret@db.example/iowall")
    assert _disk() == "the store is postgresql://me:***@db.example/iowall, not a file here"


def test_a_recipes_device_bed_is_guarded_before_the_lock(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the guard ran when the bed was provisioned, under the lock: with another measurement
    # running, a device iowall would refuse was reported as "another measurement is running"
    monkeypatch.setattr(iowall.actions.target, "exclusive", _forbid("exclusive"))
    monkeypatch.setattr(iowall.cli.run, "Store", _forbid("Store"))
    four = "device:/dev/null,/dev/zero,/dev/full,/dev/urandom"
    rc, _, err = _run(capsys, "run", "bdev-rwmix", "--quick", "--bed", four)
    assert rc == 2 and err.count("\n") == 1, err
    assert ("refusing /dev/null" in err) if os.geteuid() == 0 else ("needs root" in err), err
    # the number of devices a recipe takes is said before the guard looks at any of them
    rc, _, err = _run(capsys, "run", "bdev-rwmix", "--quick", "--bed", "device:/dev/null")
    assert rc == 2 and "bdev-rwmix needs 4 devices (one per partition)" in err, err
