"""The device bed's guard on real loop devices made to look like each case it must refuse
(mounted, a mounted "partition" sharing its blocks, the root disk, active swap, filesystem,
partition-table and LVM signatures), the allow-list with and without --wipe, and device beds
used end to end (`iowall run` of a plan, bdev-rwmix's partitions form). Holders (dm, md, LVM)
cannot be made on this kernel (no device-mapper, no md): that check runs on a fake sysfs tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iowall.beds import BedSpec, bed_with_wipe, guard, provision
from iowall.store import Store
from iowall.vocab.errors import UserError
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]
MIB = 1 << 20

MakeLoop = Callable[..., str]


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def signatures(dev: str) -> list[str]:
    out = sh("wipefs", "-n", "--json", dev)
    return [s["type"] for s in json.loads(out)["signatures"]] if out else []


def refusal(dev: str, need: int = 64 * MIB, wipe: bool = False) -> str:
    with pytest.raises(UserError) as e:
        guard.check(dev, need_bytes=need, wipe=wipe)
    msg = str(e.value)
    assert msg.startswith(f"refusing {dev}: ") and "\n" not in msg
    return msg


@pytest.fixture
def loops(no_leftovers: None, tmp_path: Path) -> Iterator[MakeLoop]:
    """Make loop devices over sparse images (``iowall-`` in their names, so no_leftovers sees
    any left behind); unmount, swapoff, detach and delete everything afterwards."""
    made: list[tuple[str, Path]] = []

    def make(
        size: int = 512 * MIB,
        image: Path | None = None,
        offset: int = 0,
        sizelimit: int = 0,
        backing: str = "",
        read_only: bool = False,
    ) -> str:
        if backing:
            img = Path(backing)
        elif image is None:
            img = tmp_path / f"iowall-dev{len(made)}.img"
            with open(img, "wb") as f:
                f.truncate(size)
        else:
            img = image
        argv = ["losetup", "-f", "--show"]
        if offset:
            argv += ["--offset", str(offset)]
        if sizelimit:
            argv += ["--sizelimit", str(sizelimit)]
        if read_only:
            argv.append("-r")
        dev = sh(*argv, str(img))
        made.append((dev, img))
        return dev

    yield make
    for dev, _ in reversed(made):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            if line.split()[0] == dev:
                subprocess.run(["umount", line.split()[1]], check=False)
        subprocess.run(["swapoff", dev], capture_output=True, check=False)
        subprocess.run(["losetup", "-d", dev], check=False)
    for _, img in made:
        if str(img).startswith(str(tmp_path)):
            img.unlink(missing_ok=True)


@pytest.fixture
def allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private allow-list (IOWALL_DEVICES_FILE), empty at first; a private journal."""
    p = tmp_path / "devices"
    p.write_text("# iowall test allow-list\n")
    monkeypatch.setenv(guard.DEVICES_ENV, str(p))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return p


def test_blank_device_is_accepted(loops: MakeLoop, allow_list: Path) -> None:
    dev = loops()
    v = guard.check(dev, need_bytes=256 * MIB, wipe=False)
    assert v.signatures == () and not v.allow_listed and v.size_bytes == 512 * MIB
    assert "no signature (wipefs -n)" in v.passed and "not mounted" in v.passed


def test_mounted_device_is_refused(loops: MakeLoop, tmp_path: Path) -> None:
    dev = loops()
    sh("mkfs.xfs", "-q", dev)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    sh("mount", dev, str(mnt))
    try:
        assert f"it is mounted at {mnt}: unmount it first" in refusal(dev)
    finally:
        sh("umount", str(mnt))


def test_mounted_partition_sharing_blocks_is_refused(loops: MakeLoop, tmp_path: Path) -> None:
    """A second loop device over the same image at an offset plays a partition: mounting it
    makes the whole device unsafe, but not a loop device over other bytes of the image."""
    img = tmp_path / "iowall-shared.img"
    with open(img, "wb") as f:
        f.truncate(1024 * MIB)
    whole = loops(image=img)
    part = loops(image=img, offset=512 * MIB, sizelimit=384 * MIB)
    before = loops(image=img, sizelimit=512 * MIB)  # bytes [0, 512M): no overlap
    sh("mkfs.xfs", "-q", part)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    sh("mount", part, str(mnt))
    try:
        msg = refusal(whole)
        assert f"mounted at {mnt} through {part}, which shares its blocks" in msg, msg
        assert guard.check(before, need_bytes=64 * MIB, wipe=False).signatures == ()
    finally:
        sh("umount", str(mnt))


def test_holders_fake_sysfs(tmp_path: Path, loops: MakeLoop) -> None:
    """No device-mapper or md on this kernel: a sysfs tree shaped like /sys/class/block with
    a dm device on a disk and an md array on a partition of another."""
    blk = tmp_path / "sys" / "class" / "block"
    for disk, part, holder, on in (("sdx", None, "dm-0", "sdx"), ("sdy", "sdy1", "md0", "sdy1")):
        d = blk / disk
        (d / "holders").mkdir(parents=True)
        (d / "size").write_text("2097152\n")
        if part:
            p = d / part
            (p / "holders").mkdir(parents=True)
            (p / "partition").write_text("1\n")
            (blk / part).symlink_to(p)
        (blk / on / "holders" / holder).mkdir()
    host = guard.Host(sys=tmp_path / "sys")
    assert guard.held("sdx", host) == (
        "/dev/sdx is held by dm-0 (device-mapper, md or LVM): stop what is stacked on it first"
    )
    assert "/dev/sdy1 is held by md0" in str(guard.held("sdy", host))
    assert guard.held("sdy1", host) is not None
    dev = loops()
    assert guard.held(os.path.basename(dev)) is None  # and the real thing, with no holders


def test_root_disk_is_refused_never_written() -> None:
    src = sh("findmnt", "-n", "-o", "SOURCE", "/")
    disk = sh("lsblk", "-n", "-d", "-o", "PKNAME", src) or os.path.basename(src)
    assert "it holds / (mounted from" in refusal(f"/dev/{disk}")


def test_loop_over_swap_device_is_refused(loops: MakeLoop) -> None:
    """A loop device backed by a block device in use as swap shares the swap's blocks (a loop
    over the root disk itself is not permitted on this machine: losetup gets EPERM)."""
    swap = loops(size=256 * MIB)
    sh("mkswap", swap)
    sh("swapon", swap)
    try:
        over = loops(backing=swap)
        assert f"it holds active swap ({swap} in /proc/swaps)" in refusal(over)
    finally:
        sh("swapoff", swap)


def test_active_swap_is_refused(loops: MakeLoop) -> None:
    dev = loops(size=256 * MIB)
    sh("mkswap", dev)
    sh("swapon", dev)
    try:
        assert f"it holds active swap ({dev} in /proc/swaps)" in refusal(dev)
    finally:
        sh("swapoff", dev)
    assert "a swap signature" in refusal(dev)


def _xfs(dev: str) -> None:
    sh("mkfs.xfs", "-q", "-f", dev)


def _ext4(dev: str) -> None:
    sh("mkfs.ext4", "-q", "-F", dev)


def _btrfs(dev: str) -> None:
    sh("mkfs.btrfs", "-q", "-f", dev)


def _table(label: str) -> Callable[[str], None]:
    def make(dev: str) -> None:
        if not shutil.which("sfdisk"):
            pytest.skip("sfdisk not installed (apt-get install fdisk)")
        subprocess.run(
            ["sfdisk", "-q", "--no-reread", dev],
            input=f"label: {label}\n,,L\n",
            text=True,
            check=True,
            capture_output=True,
        )

    return make


def _lvm(dev: str) -> None:
    if not shutil.which("pvcreate"):
        pytest.skip("lvm2 not installed")
    cp = subprocess.run(["pvcreate", "-ff", "-y", dev], capture_output=True, text=True)
    if cp.returncode != 0:
        pytest.skip(f"pvcreate does not work here: {cp.stderr.strip()}")


@pytest.mark.parametrize(
    "make,words",
    [
        (_xfs, "an xfs filesystem"),
        (_ext4, "an ext4 filesystem"),
        (_btrfs, "a btrfs filesystem"),
        (_table("dos"), "a dos partition table"),
        (_table("gpt"), "a gpt partition table"),
        (_lvm, "an LVM physical volume signature"),
    ],
    ids=["xfs", "ext4", "btrfs", "dos", "gpt", "lvm"],
)
def test_signatures_are_refused_unless_allowed_and_wiped(
    loops: MakeLoop, allow_list: Path, make: Callable[[str], None], words: str
) -> None:
    dev = loops()
    make(dev)
    msg = refusal(dev)
    assert words in msg and msg.endswith(
        f"(wipefs -n); list it in {allow_list} and pass --wipe to overwrite it"
    ), msg
    with open(allow_list, "a") as f:
        f.write(f"{dev}  # the test's device\n")
    msg = refusal(dev)
    assert msg.endswith(f"(wipefs -n) and is listed in {allow_list}: pass --wipe to erase it")
    v = guard.check(dev, need_bytes=64 * MIB, wipe=True)
    assert v.allow_listed and v.signatures
    assert signatures(dev)  # the guard itself never writes


def test_allowed_and_wiped_device_is_provisioned_and_left_blank(loops: MakeLoop, allow_list: Path) -> None:
    dev = loops()
    _ext4(dev)
    allow_list.write_text(f"# by device number\n{dev}\n")
    with pytest.raises(UserError, match="pass --wipe to erase it"):
        with provision(BedSpec.parse(f"device:{dev}"), fs="xfs"):
            pass
    assert signatures(dev) == ["ext4"]
    with provision(BedSpec.parse(f"device+wipe:{dev}"), fs="xfs") as bed:
        assert os.path.ismount(bed.path) and bed.device == dev
        assert any(n.startswith(f"wiped {dev} before use") and "(ext4)" in n for n in bed.notes), bed.notes
        facts = bed.facts["devices"][0]
        assert facts["path"] == dev and facts["size_bytes"] == 512 * MIB
        assert "wiped" in facts and facts["guard"]["allow_listed"]
        assert bed.facts["fs"] == "xfs" and signatures(dev) == ["xfs"]
        mnt = bed.path
    assert not os.path.ismount(mnt) and signatures(dev) == []


def test_small_device_and_device_list_refused(loops: MakeLoop, allow_list: Path) -> None:
    dev = loops(size=128 * MIB)
    with pytest.raises(UserError, match=r"it has 128\.0 MiB and the bed needs 256\.0 MiB"):
        with provision(BedSpec.parse(f"device:{dev}"), fs="xfs"):
            pass
    with pytest.raises(UserError, match="a filesystem bed takes one device"):
        with provision(BedSpec.parse(f"device:{dev},{dev}"), fs="xfs"):
            pass
    assert signatures(dev) == []


def _env(tmp_path: Path, allow: Path) -> dict[str, str]:
    return {
        **os.environ,
        "IOWALL_DB": f"sqlite:///{tmp_path / 'iowall.db'}",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        guard.DEVICES_ENV: str(allow),
    }


def test_cli_refusals_are_one_line_exit_2(loops: MakeLoop, allow_list: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, allow_list)
    dev = loops()
    _xfs(dev)
    cp = iowall("limits", "--bed", f"device:{dev}", "--quick", env=env)
    assert cp.returncode == 2
    assert cp.stderr.strip().splitlines() == [
        f"iowall: error: refusing {dev}: it carries an xfs filesystem at offset 0x0 (wipefs -n); "
        f"list it in {allow_list} and pass --wipe to overwrite it"
    ]
    cp = iowall("limits", "--wipe", "--quick", env=env)
    assert cp.returncode == 2 and "--wipe applies to --bed device:/dev/X only" in cp.stderr
    plan = tmp_path / "dev.toml"  # a plan names its device bed: the same guard decides
    plan.write_text(f'[workload]\nrw = "write"\nsize = "16M"\n[bed]\nkind = "device:{dev}"\n')
    cp = iowall("run", str(plan), env=env)
    assert cp.returncode == 2 and f"refusing {dev}: it carries an xfs filesystem" in cp.stderr, cp.stderr
    plan.write_text(f'[workload]\nrw = "write"\nsize = "16M"\n[bed]\nkind = "device+wipe:{dev}"\n')
    cp = iowall("run", str(plan), env=env)
    assert cp.returncode == 2 and "a plan file cannot wipe a device" in cp.stderr, cp.stderr
    cp = iowall("run", "bdev-rwmix", "--bed", f"device:{dev}", env=env)
    assert cp.returncode == 2 and "bdev-rwmix needs 4 devices (one per partition)" in cp.stderr
    assert signatures(dev) == ["xfs"]


def test_run_plan_on_device_bed_end_to_end(loops: MakeLoop, allow_list: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, allow_list)
    dev = loops()
    plan = tmp_path / "tiny.toml"
    plan.write_text(
        'label = "dev"\nrepeat = 1\n[workload]\nkind = "fio"\nrw = "write"\n'
        'bs = "1M"\nsize = "16M"\nend_fsync = 1\n[bed]\nsize = "300M"\n'
    )
    cp = iowall("run", str(plan), "--bed", f"device:{dev}", "--format", "json", env=env, timeout=300)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert [r["status"] for r in doc["runs"]] == ["ok"]
    (run,) = Store(env["IOWALL_DB"]).runs()
    assert run.bed["kind"] == "device" and run.bed["device"] == dev
    assert run.bed["devices"][0]["size_bytes"] == 512 * MIB
    assert "no signature (wipefs -n)" in run.bed["devices"][0]["guard"]["checks_passed"]
    assert run.metric("write_io_bytes") == 16 * MIB
    assert dev not in Path("/proc/self/mounts").read_text()
    assert signatures(dev) == []  # the xfs iowall made was erased at teardown
    assert not list(Path(env["XDG_STATE_HOME"], "iowall", "journal").glob("*.json"))


def test_bdev_rwmix_on_four_given_devices(loops: MakeLoop, allow_list: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, allow_list)
    devs = [loops(size=256 * MIB) for _ in range(4)]
    cp = iowall(
        "run",
        "bdev-rwmix",
        "--quick",
        "--bed",
        "device:" + ",".join(devs),
        "--set",
        "rwmixwrite=0,30",
        "--set",
        "runtime=1",
        "--format",
        "json",
        env=env,
        timeout=300,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    assert any(f"the 4 devices given ({', '.join(devs)})" in n for n in doc["notes"])
    for run in doc["runs"]:
        for i in range(1, 5):
            assert run["metrics"][f"inst{i}_read_bw_bytes_per_s"]["value"] > 0
    stored = Store(env["IOWALL_DB"]).runs()
    assert stored[0].bed["partitions"] == devs
    assert [d["path"] for d in stored[0].bed["devices"]] == devs
    # fio's invalidate off (it would flush each device at every pass), said and in the job run
    assert any(n.startswith("invalidate=0 (the seed ran fio's default, 1)") for n in doc["notes"])
    art = Store(env["IOWALL_DB"]).artifact(stored[0].id or 0, "inst1_job.fio")
    assert art is not None, [a.name for a in stored[0].artifacts]
    body = art.body.decode() if isinstance(art.body, bytes) else str(art.body)
    assert "invalidate=0" in body, body


def test_bed_spec_device_forms() -> None:
    spec = BedSpec.parse("device:/dev/sdb1, /dev/sdb2")
    assert (spec.kind, spec.paths, spec.wipe) == ("device", ["/dev/sdb1", "/dev/sdb2"], False)
    assert BedSpec.parse(str(spec)) == spec
    wiped = BedSpec.parse(bed_with_wipe("device:/dev/sdb", True) or "")
    assert wiped.wipe and str(wiped) == "device+wipe:/dev/sdb"
    assert bed_with_wipe("ram", False) == "ram"
    with pytest.raises(UserError, match="--wipe applies to --bed device:/dev/X only"):
        bed_with_wipe("loop", True)
    with pytest.raises(UserError, match="needs block devices by absolute path"):
        BedSpec.parse("device:sdb")
