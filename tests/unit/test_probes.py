"""Probe parsers and summaries on kernel text recorded on the development machine
(tests/fixtures/probes/raw, written by tests/fixtures/probes/record.py), and the registry."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from iowall.machine import sysinfo
from iowall.probes import (
    DEFAULT_PROBES,
    REGISTRY,
    ProbeSet,
    cpu,
    diskstats,
    flusher,
    meminfo,
    psi,
    reclaim,
    resolve,
    vmstat,
)
from iowall.probes.base import Probe, ProbeContext, ProbeResult
from iowall.probes.sampling import PAGE_SIZE, PeriodicSampler
from iowall.probes.threads import TaskTimes
from iowall.vocab.errors import UserError

FIX = Path(__file__).parents[1] / "fixtures" / "probes"


def raw(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIX / "raw" / f"{name}.json").read_text())
    return doc


def run(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIX / "runs" / f"{name}.json").read_text())
    return doc


def texts(name: str, path: str) -> list[tuple[float, str]]:
    return [(s["t"], s["files"][path]) for s in raw(name)["samples"]]


def through_sysinfo(monkeypatch: pytest.MonkeyPatch, text: str, reader: Any) -> Any:
    """Parse recorded text with iowall.machine.sysinfo's own reader (the probes reuse it)."""
    monkeypatch.setattr(sysinfo, "read", lambda path, default="": text)
    return reader()


def tasks(name: str, key: str) -> list[tuple[float, TaskTimes]]:
    return [(s["t"], {int(p): (v[0], int(v[1])) for p, v in s[key].items()}) for s in raw(name)["samples"]]


def metrics(ms: Any) -> dict[str, float]:
    return {m.name: m.value for m in ms}


# -- cpu ----------------------------------------------------------------------------------------


def test_cpu_parse_recorded_proc_stat() -> None:
    t, text = texts("buffered_throttled", "/proc/stat")[0]
    snap = cpu.parse_stat(text)
    assert set(snap) == {"cpu", "cpu0", "cpu1"}
    line = next(x for x in text.splitlines() if x.startswith("cpu0 "))
    assert snap["cpu0"] == tuple(int(x) for x in line.split()[1:9])


def test_cpu_shares_sum_to_one_and_summary_is_whole_run() -> None:
    samples = [(t, cpu.parse_stat(x)) for t, x in texts("buffered_throttled", "/proc/stat")]
    series, ms = cpu.summarize(samples)
    m = metrics(ms)
    parts = ("user", "sys", "irq", "iowait", "idle", "steal")
    assert sum(m[f"cpu_{k}_share"] for k in parts) == pytest.approx(1.0)
    assert m["cpus"] == 2
    assert m["cpu_sys_cpus"] == pytest.approx(2 * m["cpu_sys_share"])
    assert m["cpu_kernel_share"] == pytest.approx(m["cpu_sys_share"] + m["cpu_irq_share"])
    names = {s.name for s in series}
    assert {"cpu0_sys_share", "cpu1_idle_share", "cpu_sys_share"} <= names
    allsys = next(s for s in series if s.name == "cpu_sys_share")
    assert len(allsys.samples) == len(samples) - 1
    assert all(0.0 <= v <= 1.0 for _, v in allsys.samples)
    # the whole-run share is the time-weighted mean of the interval shares (equal weights ±)
    assert min(v for _, v in allsys.samples) <= m["cpu_sys_share"] <= m["cpu_sys_share_max"]


def test_cpu_negative_delta_counts_zero() -> None:
    a = (10, 0, 10, 10, 50, 0, 0, 0)
    b = (20, 0, 20, 20, 40, 0, 0, 0)  # iowait went backwards
    s = cpu.shares(a, b)
    assert s["iowait"] == 0.0 and s["user"] == pytest.approx(1 / 3)


# -- vmstat / meminfo ---------------------------------------------------------------------------


def test_vmstat_levels_in_bytes_and_no_gauge_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = texts("buffered_throttled", "/proc/vmstat")
    samples = [(t, vmstat.select(through_sysinfo(monkeypatch, x, sysinfo.vmstat))) for t, x in recorded]
    last_text = recorded[-1][1]
    nr_dirty = int(next(x for x in last_text.splitlines() if x.startswith("nr_dirty ")).split()[1])
    assert samples[-1][1]["nr_dirty"] == nr_dirty
    series, ms = vmstat.summarize(samples)
    m = metrics(ms)
    assert "workingset_nodes" not in samples[0][1]  # a gauge, not a counter
    assert all(v >= 0 for k, v in m.items() if k.endswith("_per_s"))
    assert m["vm_dirty_max_bytes"] >= nr_dirty * PAGE_SIZE
    # vm.dirty_bytes was 32 MiB during the workload (set after the probes started, restored
    # before they stopped): the kernel's threshold level shows it, in bytes
    thr = next(s for s in series if s.name == "dirty_threshold_bytes")
    assert [v for _, v in thr.samples][1:-1] == [32 << 20] * (len(thr.samples) - 2)
    assert thr.samples[0][1] > 32 << 20
    # the range it moved in: min and max over the window, as the series shows it
    vals = [v for _, v in thr.samples]
    assert m["vm_dirty_threshold_min_bytes"] == min(vals) == 32 << 20
    assert m["vm_dirty_threshold_max_bytes"] == max(vals) > 32 << 20
    bg = [v for s in series if s.name == "dirty_background_threshold_bytes" for _, v in s.samples]
    assert m["vm_dirty_background_threshold_min_bytes"] == min(bg) < m["vm_dirty_threshold_min_bytes"]
    for name in ("pgscan", "pgsteal", "allocstall"):
        assert any(s.name == f"{name}_per_s" for s in series)

    # the pages written back over the window, as the recorded counter moved, in pages a second
    def count(text: str, key: str) -> int:
        return int(next(x for x in text.splitlines() if x.startswith(key + " ")).split()[1])

    for key in ("nr_written", "nr_dirtied"):
        moved = count(last_text, key) - count(recorded[0][1], key)
        assert moved > 0 and m[f"vm_{key}_per_s"] == pytest.approx(moved / (recorded[-1][0] - recorded[0][0]))


def test_meminfo_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = texts("buffered_throttled", "/proc/meminfo")
    samples = [(t, meminfo.select(through_sysinfo(monkeypatch, x, sysinfo.meminfo))) for t, x in recorded]
    kb = int(next(x for x in recorded[0][1].splitlines() if x.startswith("Dirty:")).split()[1])
    assert samples[0][1]["Dirty"] == kb * 1024
    series, ms = meminfo.summarize(samples)
    m = metrics(ms)
    assert {s.name for s in series} == {"dirty_bytes", "writeback_bytes", "cached_bytes"}
    assert m["mem_dirty_max_bytes"] >= m["mem_dirty_mean_bytes"] > 0


# -- diskstats ----------------------------------------------------------------------------------


def test_diskstats_parse_filters_by_devno_and_name() -> None:
    r = raw("direct_write")
    text = r["samples"][0]["files"]["/proc/diskstats"]
    by_devno = diskstats.parse_diskstats(text, [r["devno"]])
    by_name = diskstats.parse_diskstats(text, r["device"])
    assert list(by_devno) == r["device"] == list(by_name)
    assert len(diskstats.parse_diskstats(text)) > 1


def test_diskstats_direct_write_bytes_match_fio() -> None:
    """Seed-grade check on recorded data: diskstats' bytes written over the run are fio's
    bytes within 2% (a direct write: nothing stays in the page cache)."""
    r = raw("direct_write")
    samples = [
        (s["t"], diskstats.parse_diskstats(s["files"]["/proc/diskstats"], [r["devno"]])) for s in r["samples"]
    ]
    series, ms = diskstats.summarize(samples)
    m = metrics(ms)
    fio_bytes = r["workload"]["io_bytes"]
    assert m["disk_write_bytes"] == pytest.approx(fio_bytes, rel=0.02)
    assert 0.0 < m["disk_util"] <= m["disk_util_max"] <= 1.0
    dev = r["device"][0]
    wbs = next(s for s in series if s.name == f"{dev}_write_bytes_per_s")
    assert max(v for _, v in wbs.samples) > 0
    assert m["disk_write_ios"] > 0 and m["disk_queue_depth"] > 0


# -- psi ----------------------------------------------------------------------------------------


def test_psi_parse_and_shares() -> None:
    r = raw("buffered_throttled")
    samples = []
    for s in r["samples"]:
        snap: dict[str, int] = {}
        for res in psi.RESOURCES:
            snap.update(psi.parse_pressure(res, s["files"][f"/proc/pressure/{res}"]))
        samples.append((s["t"], snap))
    assert {"io_some", "io_full", "memory_some", "memory_full", "cpu_some"} <= set(samples[0][1])
    first = r["samples"][0]["files"]["/proc/pressure/io"]
    assert samples[0][1]["io_some"] == int(first.split("total=")[1].split()[0])
    series, ms = psi.summarize(samples)
    m = metrics(ms)
    assert all(0.0 <= v <= 1.0 for v in m.values())
    # throttled writers sleep in io_schedule_timeout: io pressure is visible
    assert m["psi_io_some_share"] > 0.05


# -- flusher / reclaim --------------------------------------------------------------------------


def test_flush_bdi_from_comm() -> None:
    assert flusher.flush_bdi("kworker/u8:3-flush-7:0") == "7:0"
    assert flusher.flush_bdi("kworker/u8:3+flush-259:12") == "259:12"
    assert flusher.flush_bdi("kworker/u8:2-loop0") is None
    assert flusher.flush_bdi("kworker/R-writeback") is None
    assert flusher.flush_bdi("kworker/u8:1+flush-btrfs-2") == "btrfs-2"
    comms = {c for s in raw("smallfiles")["samples"] for c, _ in s["kworkers"].values()}
    assert any(flusher.flush_bdi(c) == raw("smallfiles")["devno"] for c in comms)


def test_flusher_share_on_recorded_small_file_run() -> None:
    r = raw("smallfiles")
    samples = tasks("smallfiles", "kworkers")
    series, ms = flusher.summarize(samples, [r["devno"]])
    m = metrics(ms)
    assert m["flusher_cpu_s"] > 0.1
    assert 0 < m["flusher_cpu_share"] <= m["flusher_cpu_share_max"] <= 1.0
    assert m["flusher_workers"] >= 1
    (s,) = series
    assert s.name == "flusher_cpu_share" and s.unit == "CPUs"
    wall = samples[-1][0] - samples[0][0]
    assert m["flusher_cpu_share"] == pytest.approx(m["flusher_cpu_s"] / wall)
    # another device's flusher is not counted
    _, other = flusher.summarize(samples, ["254:99"])
    assert metrics(other)["flusher_cpu_s"] == 0.0


def test_flusher_attribution_follows_the_tag() -> None:
    """A worker's interval counts while it carries the tag at either end of it."""
    s0: TaskTimes = {10: ("kworker/u8:1-events_unbound", 0), 11: ("kworker/u8:2-loop0", 0)}
    s1: TaskTimes = {10: ("kworker/u8:1+flush-7:0", 400_000_000), 11: ("kworker/u8:2-loop0", 10)}
    s2: TaskTimes = {10: ("kworker/u8:1-events_unbound", 600_000_000), 11: ("kworker/u8:2-flush-7:1", 20)}
    rows, workers = flusher.attribute([(0.0, s0), (1.0, s1), (2.0, s2)], ["7:0"])
    assert [round(c["7:0"], 3) for _, _, c in rows] == [0.4, 0.2]
    assert workers == {10}


def test_reclaim_on_recorded_scans() -> None:
    samples = tasks("buffered_throttled", "kswapd")
    assert all(reclaim.is_kswapd(c) for _, s in samples for c, _ in s.values())
    assert reclaim.is_kswapd("kswapd0") and not reclaim.is_kswapd("kswapd_x")
    series, ms = reclaim.summarize(samples)
    m = metrics(ms)
    assert 0.0 <= m["kswapd_cpu_share"] <= m["kswapd_cpu_share_max"] + 1e-9
    assert series[0].name == "kswapd_cpu_share"


# -- sampler and registry -----------------------------------------------------------------------


def test_sampler_keeps_sampling_after_a_failed_read() -> None:
    n = iter(range(1000))

    def read() -> int:
        i = next(n)
        if i == 2:
            raise OSError("gone")
        return i

    s = PeriodicSampler(read, 0.02)
    s.start()
    time.sleep(0.2)
    out = s.stop()
    assert isinstance(s.error, OSError)
    assert len(out) >= 5 and 2 not in [v for _, v in out]
    assert [t for t, _ in out] == sorted(t for t, _ in out)
    assert s.stop() == out  # idempotent


def test_resolve() -> None:
    assert [c.name for c in resolve("default")] == list(DEFAULT_PROBES)
    assert resolve("none") == [] and resolve("") == []
    assert [c.name for c in resolve("all")] == list(REGISTRY)
    assert [c.name for c in resolve("cpu,locks,cpu")] == ["cpu", "locks"]
    assert "locks" not in DEFAULT_PROBES
    assert resolve("default,locks")[-1].name == "locks"
    with pytest.raises(UserError) as e:
        resolve("cpu,bogus")
    assert "bogus" in str(e.value) and "flusher" in str(e.value)


class _Skip(Probe):
    name = "skipme"

    def unavailable(self) -> str | None:
        return "not here"

    def start(self) -> None:
        raise AssertionError("must not start")

    def stop(self) -> ProbeResult:
        raise AssertionError("must not stop")


class _BadStart(Probe):
    name = "badstart"

    def start(self) -> None:
        raise OSError("no such file")

    def stop(self) -> ProbeResult:
        raise AssertionError("must not stop")


class _BadStop(Probe):
    name = "badstop"
    stops = 0

    def start(self) -> None:
        pass

    def stop(self) -> ProbeResult:
        type(self).stops += 1
        raise RuntimeError("boom")


def test_probe_set_isolates_failures_and_stop_is_idempotent() -> None:
    ctx = ProbeContext(interval_s=0.05)
    ps = ProbeSet([REGISTRY["cpu"], _Skip, _BadStart, _BadStop, REGISTRY["psi"]], ctx)
    ps.start()
    time.sleep(0.15)
    res = {r.probe: r for r in ps.stop()}
    assert list(res) == ["cpu", "skipme", "badstart", "badstop", "psi"]
    assert res["skipme"].skipped == "not here"
    assert res["badstart"].skipped.startswith("failed to start: no such file")
    assert res["badstop"].skipped == "failed: boom"
    assert not res["cpu"].skipped and res["cpu"].metrics
    assert not res["psi"].skipped and res["psi"].series
    assert ps.stop() is ps.stop() and _BadStop.stops == 1


def test_probe_set_stop_before_start_and_in_a_thread() -> None:
    ps = ProbeSet(resolve("cpu"), ProbeContext(interval_s=0.05))
    assert ps.stop()[0].skipped == "not started"
    ps2 = ProbeSet(resolve("cpu,meminfo"), ProbeContext(interval_s=0.05))
    out: list[list[ProbeResult]] = []

    def in_thread() -> None:
        ps2.start()
        time.sleep(0.1)
        out.append(ps2.stop())

    th = threading.Thread(target=in_thread)
    th.start()
    th.join()
    assert [r.probe for r in out[0]] == ["cpu", "meminfo"]
    cpu_series = next(s for s in out[0][0].series if s.name == "cpu_sys_share")
    mem_series = out[0][1].series[0]
    # one time origin for the whole set: levels start at 0, rates at the first interval's end
    assert mem_series.samples[0][0] < 0.02
    assert abs(cpu_series.samples[0][0] - mem_series.samples[1][0]) < 0.02


def test_diskstats_unavailable_without_a_device() -> None:
    assert "no block device" in (diskstats.DiskstatsProbe(ProbeContext()).unavailable() or "")
    bad = diskstats.DiskstatsProbe(ProbeContext(devices=("nosuchdev",), devnos=("999:999",)))
    assert "not in /proc/diskstats" in (bad.unavailable() or "")


def test_bdi_names_adds_a_btrfs_bdi(tmp_path: Path) -> None:
    """The layout of /sys/fs/btrfs as this kernel shows it (uuid/devices/loopN, uuid/bdi)."""
    from iowall.probes.bdi import bdi_names

    fs = tmp_path / "84283190-947c-4360-a76e-03b81e5d1ac2"
    (fs / "devices").mkdir(parents=True)
    (fs / "devices" / "loop0").touch()
    (tmp_path / "bdi-target" / "btrfs-2").mkdir(parents=True)
    (fs / "bdi").symlink_to(tmp_path / "bdi-target" / "btrfs-2")
    (tmp_path / "features").mkdir()
    assert bdi_names(["loop0"], ["7:0"], str(tmp_path)) == ("7:0", "btrfs-2")
    assert bdi_names(["loop1"], ["7:1"], str(tmp_path)) == ("7:1",)
    assert bdi_names([], [], str(tmp_path / "missing")) == ()


class _Interrupted(Probe):
    name = "ctrlc"

    def start(self) -> None:
        from iowall.vocab.errors import Interrupted

        raise Interrupted("SIGINT")

    def stop(self) -> ProbeResult:
        raise AssertionError("must not stop")


def test_probe_set_interrupted_while_starting_stops_what_started() -> None:
    from iowall.vocab.errors import Interrupted

    ps = ProbeSet([REGISTRY["cpu"], _Interrupted, REGISTRY["psi"]], ProbeContext(interval_s=0.05))
    with pytest.raises(Interrupted):
        ps.start()
    res = {r.probe: r for r in ps.stop()}
    assert not res["cpu"].skipped and res["cpu"].metrics  # started, then stopped
    assert res["ctrlc"].skipped == res["psi"].skipped == "not started"
