"""`iowall ab` for real: two Debian kernel packages booted in virtme-ng guests on this
machine. Its CPU has no vmx/svm, so KVM does not run a guest and everything is emulated
(--allow-emulated): the test checks the plumbing and the honesty, not the kernels' numbers.

Kept cheap: a plan writing 32 MiB through the page cache on a 320 MiB ram bed (mkfs.xfs
refuses below 300 MB) in a 2 GiB guest of one vCPU, one repeat per boot. Under TCG one vCPU
is the faster guest: an A/A of two boots took 113 s with one against 146 s with two (53-60 s
a boot against 70-74), and it leaves the other host CPU to the tests beside it. The kernels
are fetched once into a cache kept between runs (KERNELS below); the run directories are
removed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root
from tests.guests import KERNELS, NEW, OLD, PLAN, bundle_uuids, qemus_naming

pytestmark = [needs_root, pytest.mark.slow]


@pytest.fixture
def ab_env(iowall_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The CLI's environment with the shared kernel cache linked into a private cache dir."""
    cache = tmp_path / "cache"
    (cache / "iowall").mkdir(parents=True)
    os.makedirs(KERNELS, exist_ok=True)
    (cache / "iowall" / "ab").symlink_to(KERNELS)
    return {**iowall_env, "XDG_CACHE_HOME": str(cache)}


def _ab(env: dict[str, str], tmp_path: Path, *args: str) -> tuple[int, str, str, float]:
    plan = tmp_path / "tiny.toml"
    plan.write_text(PLAN)
    t0 = time.monotonic()
    cp = None
    try:
        cp = iowall(
            "ab",
            *args,
            "--allow-emulated",
            "--memory",
            "2G",
            "--cpus",
            "1",
            "--probes",
            "cpu,vmstat",
            "--timeout",
            "900",
            str(plan),
            env=env,
            timeout=3600,
        )
    finally:  # its consoles and guest stores; the kernels stay cached
        _remove_own_runs(cp)
    return cp.returncode, cp.stdout, cp.stderr, time.monotonic() - t0


def _remove_own_runs(cp: subprocess.CompletedProcess[str] | None) -> None:
    """The run directory `iowall ab` named ("files in DIR"), and only it: the guests tests
    run two at a time (scripts/test-lanes.sh), each beside the other's directory."""
    found = re.search(r"files in (\S+)", cp.stderr if cp is not None else "")
    if found and found.group(1).startswith(os.path.realpath(KERNELS) + "/runs/"):
        shutil.rmtree(found.group(1), ignore_errors=True)


@pytest.fixture
def no_guest_left() -> Iterator[None]:
    """Fail the test if a qemu it started still runs a few seconds after it. Not the
    machine-wide leftover check (loops, mounts, images): `iowall ab` makes no bed on this
    machine (each guest makes its own, in its own /run and /dev/shm), and the measuring tests
    that run beside the guests (scripts/test-lanes.sh) make beds of their own."""
    before = _qemus()
    yield
    deadline = time.monotonic() + 10
    while _qemus() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _qemus() - before, "a guest still runs after the test"


@pytest.mark.guests
def test_a_kernel_that_does_not_boot(ab_env: dict[str, str], tmp_path: Path, no_guest_left: None) -> None:
    garbage = tmp_path / "vmlinuz-garbage"
    garbage.write_bytes(os.urandom(1 << 20))
    rc, _out, err, took = _ab(
        ab_env, tmp_path, "--kernel", str(garbage), "--kernel", OLD, "--rounds", "1", "--boot-timeout", "10"
    )
    print(f"\nab with a garbage kernel: {took:.0f} s\n{err}")
    assert rc == 2, err
    assert f"kernel '{garbage}' does not boot" in err
    # a hang until the boot timeout, or qemu itself giving up (this qemu's TCG asserts on
    # some garbage): either way before the guest command, and the image named as no bzImage
    assert "no guest command within 10 s" in err or "before the guest command" in err, err
    assert "not a bzImage" in err
    assert "console.log" in err and "    | " in err  # the console's last lines


@pytest.mark.guests
def test_two_debian_kernels_emulated(ab_env: dict[str, str], tmp_path: Path, no_guest_left: None) -> None:
    # one round (two boots, ~55 s each under TCG, one vCPU): the alternation of rounds (A B, then B A)
    # and a boot tried again are unit tests of run_rounds (tests/unit/test_ab.py)
    rc, out, err, took = _ab(
        ab_env, tmp_path, "--kernel", OLD, "--kernel", NEW, "--rounds", "1", "--format", "json"
    )
    print(f"\nab, two kernels, 1 round, emulated: {took:.0f} s\n{err}")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["title"].startswith("iowall ab: 6.12.111+deb12-amd64 against 6.1.0-50-amd64")
    assert doc["head"][0].startswith("EMULATED")
    assert any("build id " in h and "not measured" not in h for h in doc["head"][2:]), doc["head"]
    boots = doc["sections"][0]["table"]["rows"]
    # a boot that died before the guest command is booted again (the 6.12 guest panicked in
    # early boot under TCG once in CI): said in the table, never hidden
    assert all(r[3] == "FAILED, booted again" for r in boots if r[3] != "ok"), boots
    assert [(r[0], r[1], r[3]) for r in boots if r[3] == "ok"] == [
        ("1", "A", "ok"),
        ("1", "B", "ok"),
    ]
    cmp = doc["compare"]
    assert cmp["emulated"] == ["6.1.0-50-amd64", "6.12.111+deb12-amd64"]
    bw = [r for r in cmp["rows"] if r["metric"] == "write_bw_bytes_per_s"]
    assert len(bw) == 1 and bw[0]["n_base"] == bw[0]["n_new"] == 1, cmp
    assert {d["field"]: d["values"] for d in cmp["differences"]}["kernel"] == [
        "6.1.0-50-amd64",
        "6.12.111+deb12-amd64",
    ]
    text = iowall("compare", "6.1.0-50-amd64", "6.12.111+deb12-amd64", env=ab_env, check=True).stdout
    assert text.startswith("EMULATED: "), text
    run = iowall("show", str(bw[0]["base_runs"][0]), env=ab_env, check=True).stdout
    assert run.startswith("EMULATED: "), run


def _qemus() -> set[int]:
    """Pids of qemu-system processes running now."""
    out = set()
    for p in Path("/proc").glob("[0-9]*/comm"):
        try:
            if p.read_text().startswith("qemu-system"):
                out.add(int(p.parent.name))
        except OSError:
            pass
    return out


@pytest.mark.guests
def test_a_guest_killed_mid_run_keeps_its_runs(
    ab_env: dict[str, str], tmp_path: Path, no_guest_left: None
) -> None:
    """Issue 38's guest fault: A's qemu SIGKILLed once its guest has measured a run. The runs
    it measured reach the host's store with the boot's failure (its spool is in the shared
    directory), B boots and measures, and `ab` exits 1 (a guest died: a failed run)."""
    plan = tmp_path / "three.toml"
    plan.write_text(PLAN.replace("repeat = 1", "repeat = 3"))
    earlier = set(Path(KERNELS).glob("runs/*"))
    runs = Path(KERNELS) / "runs"
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    p = subprocess.Popen(
        [exe, "ab", "--kernel", OLD, "--kernel", OLD, "--rounds", "1", "--allow-emulated",
         "--memory", "2G", "--cpus", "1", "--probes", "cpu,vmstat", "--timeout", "900",
         "--format", "json", str(plan)],
        env=ab_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def spooled() -> set[str]:  # what A's guest measured, in its own run directory
        mine = [d / "r1-A" for d in runs.glob("*") if d not in earlier]
        return bundle_uuids(f for d in mine for f in d.glob("spool/*/*.json"))

    try:
        deadline = time.monotonic() + 400
        while not spooled() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.1)
        measured = spooled()
        assert measured, f"A's guest spooled no run within 400 s ({p.poll()=})"
        own = [d for d in runs.glob("*/r1-A") if d.parent not in earlier]
        killed = [pid for d in own for pid in qemus_naming(str(d))]
        assert killed, "A's guest ended before it could be killed"
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        out, err = p.communicate(timeout=1200)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        for d in set(runs.glob("*")) - earlier:
            shutil.rmtree(d, ignore_errors=True)
    print(err)
    assert p.returncode == 1, err
    assert "the guest never finished its command" in err and "measured before kept" in err, err
    doc = json.loads(out)
    assert doc["outcome"]["failed"] == 1 and doc["outcome"]["exit_code"] == 1, doc["outcome"]
    stored = Store(ab_env["IOWALL_DB"]).runs(RunFilter())
    a_ok = {r.uuid for r in stored if r.label.endswith("@A") and r.status == "ok"}
    assert measured <= a_ok, "a run A's guest measured was lost"
    assert any(r.label.endswith("@B") and r.status == "ok" for r in stored)
    # One kernel twice is an A/A (this test is the suite's only one in guests: a separate A/A
    # of two boots cost 141 s of the guests' lane): the boots are told apart as @A and @B,
    # every row pairs them, and nothing is marked, which under emulation nothing ever is
    cmp = doc["compare"]
    assert cmp["base"] == "6.1.0-50-amd64@A" and cmp["new"] == "6.1.0-50-amd64@B", cmp
    assert cmp["rows"] and not any(r["significant"] for r in cmp["rows"]), cmp["rows"]
    assert cmp["unpaired"] == [] and any("nothing is marked" in n for n in cmp["notes"]), cmp


def test_a_killed_ab_leaves_no_guest(ab_env: dict[str, str], tmp_path: Path) -> None:
    """SIGKILL `iowall ab` while its guest boots: `iowall recover` kills vng and qemu (they
    run in their own session, so the kill does not reach them)."""
    plan = tmp_path / "tiny.toml"
    plan.write_text(PLAN)
    before = _qemus()
    earlier = set(Path(KERNELS).glob("runs/*"))
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    p = subprocess.Popen(
        [
            exe,
            "ab",
            "--kernel",
            OLD,
            "--kernel",
            OLD,
            "--rounds",
            "1",
            "--allow-emulated",
            "--memory",
            "2G",
            str(plan),
        ],
        env=ab_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def booted() -> bool:  # the guest's kernel is up (vng runs short qemu probes first)
        return any(
            "Linux version" in c.read_text(errors="replace")
            for c in Path(KERNELS).glob("runs/*/r1-*/console.log")
            if c.parent.parent not in earlier  # its own run, not one left by another ab
        )

    try:
        deadline = time.monotonic() + 120
        while not booted() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.2)
        guests = _qemus() - before
        assert guests, f"no guest booted within 120 s: {p.poll()=}" + (
            p.stderr.read().decode(errors="replace") if p.stderr is not None and p.poll() is not None else ""
        )
        p.kill()
        p.wait()
        time.sleep(1)
        assert _qemus() - before, "the guest died with ab: nothing left for recover to do"
        rec = iowall("recover", env=ab_env, check=True)
        assert "killed vng and all it forked" in rec.stdout, rec.stdout
        deadline = time.monotonic() + 10
        while _qemus() & guests and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _qemus() & guests, "recover left the guest running"
    finally:
        if p.poll() is None:  # a failed check before the kill: ab would go on booting
            p.kill()
            p.wait()
        for pid in _qemus() - before:
            os.kill(pid, signal.SIGKILL)
        for d in set(Path(KERNELS).glob("runs/*")) - earlier:
            shutil.rmtree(d, ignore_errors=True)
