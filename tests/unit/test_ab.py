"""`iowall ab`'s pure parts: the build id read from a kernel's ELF notes, the labels of an
A/A pair, the boot-protocol check, and the emulated marker on the first line of a compare."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import pytest

from iowall.ab import kvm, rounds, vm
from iowall.ab.guest import build_id
from iowall.ab.kernels import Kernel, is_bzimage
from iowall.ab.rounds import (
    SIDES,
    AbConfig,
    BootRecord,
    death_line,
    guest_command,
    guest_rodirs,
    run_rounds,
    side_runs,
)
from iowall.ab.summary import _kernel_lines, ab_report, flame_pair
from iowall.actions.ab import _labels
from iowall.analysis.regress.compare import Side, compare
from iowall.model import PROFILE_ARTIFACT, Artifact, Metric, Point, Run
from iowall.report.compare import render_json, render_md, render_text
from iowall.store import Store
from iowall.vocab.errors import UserError

from .compare_data import runs


def _note(name: bytes, kind: int, desc: bytes) -> bytes:
    pad = lambda b: b + b"\0" * (-len(b) % 4)  # noqa: E731
    return struct.pack("<III", len(name), len(desc), kind) + pad(name) + pad(desc)


def test_build_id_is_the_gnu_note_among_others() -> None:
    notes = _note(b"Xen\0", 6, b"\1\2\3") + _note(b"GNU\0", 3, bytes.fromhex("deadbeef" * 5))
    assert build_id(notes) == "deadbeef" * 5
    assert build_id(_note(b"Linux\0", 3, b"\1\2")) == ""
    assert build_id(b"") == ""


def test_the_same_kernel_twice_gets_two_labels() -> None:
    k = Kernel("x", "/boot/vmlinuz-6.1.0-50-amd64", "6.1.0-50-amd64", None, "boot")
    assert _labels((k, k)) == ("6.1.0-50-amd64@A", "6.1.0-50-amd64@B")
    other = dataclasses.replace(k, release="6.12.111+deb12-amd64")
    assert _labels((k, other)) == ("6.1.0-50-amd64", "6.12.111+deb12-amd64")


def test_bzimage_magic(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 64)
    bad.write_bytes(b"\0" * 4096)
    assert is_bzimage(str(good)) and not is_bzimage(str(bad))
    assert not is_bzimage(str(tmp_path / "missing"))


def _emulated(rs: list) -> list:
    return [dataclasses.replace(r, env={**r.env, "emulated": True}) for r in rs]


def test_emulated_runs_are_said_first_in_every_rendering() -> None:
    base = runs("base", seed=1)
    new = runs("patched", seed=2, kernel="6.18.44+", start_id=100)
    plain = compare(Side("base", base), [Side("patched", new)])
    assert plain.emulated == ()
    assert not render_text(plain).startswith("EMULATED")
    res = compare(Side("base", _emulated(base)), [Side("patched", new)])
    assert res.emulated == ("base",)
    assert render_text(res).startswith("EMULATED: base ran without KVM")
    assert render_md(res).startswith("**EMULATED: base ran without KVM")
    assert "## iowall compare" in render_md(res)
    assert json.loads(json.dumps(render_json(res)))["emulated"] == ["base"]


def test_emulated_sides_are_never_judged() -> None:
    """A 3x difference is marked when measured for real, never when a side ran emulated (an
    A/A under TCG showed one: one kernel, 43 vs 129 MiB/s): intervals shown, no verdict."""
    base = runs("base", seed=1)
    new = runs("patched", seed=2, start_id=100, scale={"0": 3.0, "1": 3.0})
    real = compare(Side("base", base), [Side("patched", new)])
    assert real.rows and all(
        r.cmp.significant and r.cmp.better is not None
        for r in real.rows
        if r.metric == "write_bw_bytes_per_s"
    )
    res = compare(Side("base", base), [Side("patched", _emulated(new))])
    assert len(res.rows) == len(real.rows) and not any(r.cmp.significant for r in res.rows)
    assert all(r.cmp.better is None for r in res.rows)
    assert [x.cmp.ratio for x in res.rows] == [x.cmp.ratio for x in real.rows]
    assert any("nothing is marked better or worse" in n for n in res.notes)


def test_the_flame_pair_is_found_among_stored_runs(db_url: str) -> None:
    """The differential flame graph's two runs come from the store with their artifacts (a
    plain listing carries none, so every ab said 'no profiled run', KVM or not)."""
    store = Store(db_url)
    ids = {}
    for label, bw in (("6.1", 1.0e9), ("6.12", 1.1e9)):
        run = Run(
            point=Point("plan:ab", {"rw": "write"}),
            label=label,
            status="ok",
            started_at=1.0,
            finished_at=2.0,
            metrics=(Metric("write_bw_bytes_per_s", bw, "B/s"),),
            env={"host": {"cpu_count": 2, "mem_total_bytes": 2 << 30}},
            artifacts=(Artifact(PROFILE_ARTIFACT, "application/gzip", "H4sI"),),
        )
        ids[label] = store.add_run(run)
    records = [
        BootRecord(1, side, label, True, True, 70.0, 12.0, (ids[label],))
        for side, label in (("A", "6.1"), ("B", "6.12"))
    ]
    runs = side_runs(store, records, ["6.1", "6.12"])
    assert flame_pair(runs["6.1"], runs["6.12"]) == (ids["6.1"], ids["6.12"])
    listed = store.runs()  # what ab read before: a listing, without artifacts
    assert isinstance(flame_pair(listed[:1], listed[1:]), str)


def test_the_kvm_answer_is_kept_per_image_until_reboot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def fake_check(image: str, timeout_s: float = 20.0) -> kvm.KvmCheck:
        calls.append(image)
        return kvm.KvmCheck(False, f"no banner from {Path(image).name}", keep="transient" not in image)

    monkeypatch.setattr(kvm, "check", fake_check)
    cache = str(tmp_path / "run" / "kvm-check.json")
    a, b = tmp_path / "vmlinuz-a", tmp_path / "vmlinuz-b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    first = kvm.cached_check(str(a), cache=cache)
    again = kvm.cached_check(str(a), cache=cache)
    assert calls == [str(a)] and not again.works
    assert first.why == "no banner from vmlinuz-a" and again.why.endswith("(checked earlier since boot)")
    kvm.cached_check(str(b), cache=cache)
    a.write_bytes(b"a rebuilt")  # a new image is checked again
    kvm.cached_check(str(a), cache=cache)
    assert calls == [str(a), str(b), str(a)]
    Path(cache).write_text("{not json")  # a broken cache is no cache
    assert not kvm.cached_check(str(b), cache=cache).works and len(calls) == 4
    # an answer that may pass (a CPU with vmx/svm whose guest failed) is checked every time
    t = tmp_path / "vmlinuz-transient"
    t.write_bytes(b"t")
    assert not kvm.cached_check(str(t), cache=cache).works
    assert not kvm.cached_check(str(t), cache=cache).why.endswith("since boot)")
    assert calls[-2:] == [str(t), str(t)]


def _cfg(tmp_path: Path, attempts: int = 2, bzimage: bool = True) -> AbConfig:
    img = tmp_path / "vmlinuz"
    img.write_bytes(b"\0" * 0x202 + (b"HdrS" if bzimage else b"xxxx") + b"\0" * 64)
    k = Kernel("k", str(img), "6.1.0-50-amd64", None, "path")
    return AbConfig(
        kernels=(k, k),
        labels=("a", "b"),
        target="t",
        recipe="r",
        rounds=2,
        cpus=2,
        memory="2G",
        kvm=False,
        kvm_why="",
        workdir=str(tmp_path),
        batch="x",
        boot_attempts=attempts,
    )


def _scripted(fails: dict[tuple[int, str, int], bool]) -> tuple[list, object]:
    """A boot that fails as ``fails`` says: (round, side, attempt) -> reached the command."""
    calls: list[tuple[int, str, int]] = []

    def boot(cfg: AbConfig, store: object, rnd: int, side: int, attempt: int) -> BootRecord:
        key = (rnd, SIDES[side], attempt)
        calls.append(key)
        if key in fails:
            return BootRecord(
                rnd,
                key[1],
                cfg.labels[side],
                False,
                fails[key],
                3.0,
                None,
                (),
                "died",
                ("Kernel panic - not syncing",),
                attempt=attempt,
            )
        return BootRecord(rnd, key[1], cfg.labels[side], True, True, 50.0, 12.0, (1,), attempt=attempt)

    return calls, boot


def test_a_boot_that_dies_before_the_command_is_booted_again(tmp_path: Path) -> None:
    calls, boot = _scripted({(2, "B", 1): False})
    said: list[str] = []
    recs = run_rounds(_cfg(tmp_path), None, said.append, boot)  # type: ignore[arg-type]
    assert calls == [(1, "A", 1), (1, "B", 1), (2, "B", 1), (2, "B", 2), (2, "A", 1)]
    assert [(r.round, r.side, r.ok, r.retried) for r in recs] == [
        (1, "A", True, False),
        (1, "B", True, False),
        (2, "B", False, True),
        (2, "B", True, False),
        (2, "A", True, False),
    ]
    assert any("booting B 6.1.0-50-amd64 again (attempt 2/2)" in s for s in said), said
    # the report says it on the kernel's own line, not only in the table
    head = "\n".join(_kernel_lines(_cfg(tmp_path), recs))
    assert "B did not reach the guest command in 1 of 3 boots: round 2 (booted again)" in head
    assert "A did not" not in head


def test_a_boot_booted_again_is_no_failure_but_a_guest_that_died_is() -> None:
    """`ab`'s outcome (its exit code): the failed run of a boot that was booted again (an
    early panic under emulation) does not make it exit 1; a boot that died after its
    command started does."""
    from iowall.ab.summary import _outcome

    def run(i: int, status: str) -> Run:
        return dataclasses.replace(Run(Point("r", {}), "a", status, 1.0, 2.0), id=i)  # type: ignore[arg-type]

    def rec(ok: bool, ids: tuple[int, ...], retried: bool = False) -> BootRecord:
        return BootRecord(1, "A", "a", ok, not retried, 3.0, None, ids, "" if ok else "died", retried=retried)

    again = [rec(False, (7,), retried=True), rec(True, (8,))]
    assert _outcome(again, [run(7, "failed"), run(8, "ok")]).exit_code == 0
    died = [rec(False, (8, 9))]
    o = _outcome(died, [run(8, "ok"), run(9, "failed")])
    assert (o.measured, o.failed, o.exit_code) == (1, 1, 1)


def test_what_is_not_booted_again(tmp_path: Path) -> None:
    # the command ran and failed: the target's failure, kept as it is
    calls, boot = _scripted({(2, "B", 1): True})
    recs = run_rounds(_cfg(tmp_path), None, [].append, boot)  # type: ignore[arg-type]
    assert len(calls) == 4 and [r.ok for r in recs] == [True, True, False, True]
    # dies on every attempt: counted failed after --boot-attempts, the rounds go on
    calls, boot = _scripted({(2, "B", 1): False, (2, "B", 2): False, (2, "B", 3): False})
    recs = run_rounds(_cfg(tmp_path, attempts=3), None, [].append, boot)  # type: ignore[arg-type]
    assert [c for c in calls if c[:2] == (2, "B")] == [(2, "B", 1), (2, "B", 2), (2, "B", 3)]
    assert [r.retried for r in recs if not r.ok] == [True, True, False]
    # --boot-attempts 1: never again
    calls, boot = _scripted({(2, "B", 1): False})
    run_rounds(_cfg(tmp_path, attempts=1), None, [].append, boot)  # type: ignore[arg-type]
    assert len(calls) == 4
    # not a bzImage: its first boot is not tried again, and it does not boot
    calls, boot = _scripted({(1, "A", 1): False})
    with pytest.raises(UserError, match="does not boot"):
        run_rounds(_cfg(tmp_path, bzimage=False), None, [].append, boot)  # type: ignore[arg-type]
    assert calls == [(1, "A", 1)]
    # a first boot that dies twice: the kernel does not boot
    calls, boot = _scripted({(1, "A", 1): False, (1, "A", 2): False})
    with pytest.raises(UserError, match="does not boot"):
        run_rounds(_cfg(tmp_path), None, [].append, boot)  # type: ignore[arg-type]
    assert calls == [(1, "A", 1), (1, "A", 2)]


def test_the_death_line_is_the_first_that_names_the_cause(tmp_path: Path) -> None:
    console = tmp_path / "console.log"
    console.write_text(
        "[    0.000000] Linux version 6.12\n"
        "[    1.401000] BUG: kernel NULL pointer dereference, address: 0\n"
        "[    1.402000] Oops: 0000 [#1] PREEMPT SMP NOPTI\n"
        "[    1.423941] Kernel panic - not syncing: Fatal exception\n"
    )
    assert death_line(str(console)) == "BUG: kernel NULL pointer dereference, address: 0"
    console.write_text("[    0.000000] Linux version 6.12\nSeaBIOS\n")
    assert death_line(str(console)) == ""
    assert death_line(str(tmp_path / "missing")) == ""


@pytest.mark.parametrize(
    "absent, said",
    [
        ({"depmod"}, "depmod is missing to fetch it as a Debian package (apt-get install kmod for depmod)"),
        ({"apt-get", "dpkg-deb"}, "apt-get/dpkg-deb are missing to fetch it as a Debian package"),
    ],
)
def test_a_package_is_not_fetched_without_its_tools(
    absent: set[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil as real

    from iowall.ab import kernels

    which = real.which
    monkeypatch.setattr(
        kernels.shutil, "which", lambda t: None if t in absent else which(t) or f"/usr/bin/{t}"
    )
    with pytest.raises(UserError) as e:
        kernels._deb_kernel("linux-image-x", str(tmp_path))
    assert str(e.value) == ("kernel 'linux-image-x': not a file nor a release under /boot, and " + said)
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]  # nothing downloaded


def test_a_cached_package_is_not_indexed_without_depmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from iowall.ab import kernels

    root = tmp_path / "linux-image-x"
    (root / "boot").mkdir(parents=True)
    (root / "boot" / "vmlinuz-6.1.0-x").write_bytes(b"")
    (root / "lib" / "modules" / "6.1.0-x").mkdir(parents=True)
    monkeypatch.setattr(kernels.shutil, "which", lambda t: None)
    with pytest.raises(
        UserError,
        match=r"its modules need indexing by depmod, which is "
        r"missing \(apt-get install kmod\)",
    ):
        kernels._deb_kernel("linux-image-x", str(tmp_path))


def test_a_second_ab_waits_for_the_first_to_fetch_its_kernel(tmp_path: Path) -> None:
    # two `iowall ab` started together (make test runs two guests tests at once) would
    # otherwise both download a missing package and unpack it over each other
    import threading

    from iowall.ab import kernels

    root = tmp_path / "linux-image-x"
    (root / "boot").mkdir(parents=True)
    (root / "boot" / "vmlinuz-6.1.0-x").write_bytes(b"")
    got: list[kernels.Kernel] = []
    with kernels._cache_locked(str(tmp_path)):
        t = threading.Thread(target=lambda: got.append(kernels._deb_kernel("linux-image-x", str(tmp_path))))
        t.start()
        t.join(0.5)
        assert t.is_alive() and not got  # waits while another process holds the cache
    t.join(10)
    assert [k.release for k in got] == ["6.1.0-x"]


def test_the_guest_does_not_start_in_the_callers_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # started from a directory the guest does not have (one under /var/tmp, which the guest
    # covers with its own tmpfs), virtme-ng-init could not cd there and ran nothing
    here = tmp_path / "caller-dir"
    here.mkdir()
    monkeypatch.chdir(here)
    cfg = _cfg(tmp_path)
    cmd = guest_command(cfg, 0, str(tmp_path / "shared"))
    assert "caller-dir" not in cmd and not cmd.startswith("cd ")
    argv = vm.vng_argv(
        "vng",
        cfg.kernels[0],
        cpus=2,
        memory="2G",
        kvm=False,
        shared="/s",
        command=cmd,
        rodirs=["/var/tmp/clone/src"],
    )
    assert argv[argv.index("--cwd") + 1] == "/"
    assert argv[argv.index("--rodir") + 1] == "/var/tmp/clone/src"
    assert argv[argv.index("--exec") + 1] == cmd


def test_what_the_guest_would_not_see_is_shown_to_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert vm.hidden_in_guest(
        [
            "/var/tmp/clone/src",
            "/usr/lib",
            "/var/tmp/clone/src",
            "/var/tmpfoo",
            "/var/cache/iowall/ab/k/lib/modules/6.1",
        ]
    ) == ["/var/tmp/clone/src", "/var/cache/iowall/ab/k/lib/modules/6.1"]
    monkeypatch.setattr(rounds, "_src_dir", lambda: "/var/tmp/clone/src")
    assert "/var/tmp/clone/src" in guest_rodirs(_cfg(tmp_path), 0)


def test_a_guest_that_boots_but_cannot_start_its_command(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    boots: list[str] = []

    def boot(
        argv: list[str], console: str, timeout_s: float, *, started: str, boot_timeout_s: float
    ) -> vm.Boot:
        boots.append(console)
        Path(console).write_text(
            "[    0.000000] Linux version 6.1.0-50-amd64\n"
            "[    3.100000] virtme-ng-init: basic initialization done\n"
            "[    3.200000] virtme-ng-init: error changing directory: No such file or "
            "directory\n"
        )
        return vm.Boot(0, 5.0, console, ("virtme-ng-init: error changing directory",))

    monkeypatch.setattr(vm, "boot", boot)
    monkeypatch.setattr(vm, "vng_path", lambda: "vng")
    with pytest.raises(UserError) as e:
        run_rounds(_cfg(tmp_path), Store(db_url), [].append)
    said = str(e.value)
    assert (
        "a: the guest booted but could not start its command (the init says: "
        "virtme-ng-init: error changing directory: No such file or directory)" in said
    )
    assert "does not boot" not in said
    assert len(boots) == 1  # not booted again: it would fail the same way


def test_a_guest_killed_mid_run_leaves_its_measured_runs_to_the_host(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guest's store dies with it (it is in the guest's memory); what it measured was
    written to the shared directory's spool as it was measured (``IOWALL_SPOOL_DIR``, kept:
    ``IOWALL_SPOOL_KEEP``), and the host imports it with the boot's failure."""
    from iowall.bundle.spool import Spool
    from iowall.machine import spooldir

    cfg = dataclasses.replace(_cfg(tmp_path), rounds=1)
    measured = [
        Run(Point("r", {"i": i}), "guest", "ok", 10.0 + i, 11.0 + i, metrics=(Metric("x", 1.0 + i, "B/s"),))
        for i in range(2)
    ]

    def boot(
        argv: list[str], console: str, timeout_s: float, *, started: str, boot_timeout_s: float
    ) -> vm.Boot:
        shared = Path(started).parent
        Path(started).write_text("3.2 1.0")
        monkeypatch.setenv(spooldir.ROOT_ENV, str(shared / "spool"))
        monkeypatch.setenv(spooldir.KEEP_ENV, "1")
        spool = Spool("sqlite:////tmp/iowall-guest/guest.db", "guest-batch")
        for r in measured:
            spool.stored(spool.keep(r))  # kept: stored in a store that is about to die
        monkeypatch.delenv(spooldir.ROOT_ENV)
        monkeypatch.delenv(spooldir.KEEP_ENV)
        Path(console).write_text("[    0.000000] Linux version 6.1.0-50-amd64\n")
        return vm.Boot(-9, 30.0, console, ())  # killed: no facts, no store copied out

    monkeypatch.setattr(vm, "boot", boot)
    monkeypatch.setattr(vm, "vng_path", lambda: "vng")
    store = Store(db_url)
    records = run_rounds(cfg, store, [].append)
    a = next(r for r in records if r.label == "a")
    assert not a.ok and "2 runs it measured before kept" in a.error
    kept = [r for r in store.runs() if r.label == "a"]
    assert sorted(r.status for r in kept) == ["failed", "ok", "ok"]
    assert {r.metric("x") for r in kept if r.status == "ok"} == {1.0, 2.0}
    assert len({r.uuid for r in kept}) == 3
    # and `ab` says so to CI: a guest that died mid-run is a failed run, exit 1
    report = ab_report(cfg, records, side_runs(store, records, cfg.labels), emulated=True)
    o = report.data["outcome"]
    assert o["failed"] >= 1 and o["measured"] >= 2 and o["exit_code"] == 1, o
    assert any("did not measure" in line for line in report.tail), report.tail


def test_a_guest_whose_run_exits_1_ran_to_its_end() -> None:
    """`iowall run` exits 1 when a point failed: its runs say which, the boot is not a failure
    (before, the guest's store was not even copied out, and every run of the boot was lost)."""
    ok = {"argv": ["modprobe"], "rc": 0}
    assert rounds._ran({"rc": 0, "steps": [ok, {"argv": ["py", "-m", "iowall", "run"], "rc": 0}]})
    assert rounds._ran({"rc": 1, "steps": [ok, {"argv": ["py", "-m", "iowall", "run"], "rc": 1}]})
    assert not rounds._ran({"rc": 2, "steps": [ok, {"argv": ["py", "-m", "iowall", "run"], "rc": 2}]})
    assert not rounds._ran({"rc": 1, "steps": [{"argv": ["modprobe"], "rc": 1}]})
    assert not rounds._ran({})
