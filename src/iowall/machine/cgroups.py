"""The cgroups a task runs in, on cgroup v1, v2 or both (hybrid): where they are, the limits in
force on them (set on the group or any ancestor), and their cumulative counters. A cgroup's
CPU quota, memory limit and I/O throttle are part of the machine a run measures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: At or above this, a v1 limit is "unlimited" (the kernel shows 2**63 rounded down to a page).
V1_UNLIMITED = 1 << 62
#: The hierarchies whose paths ``Cgroups.paths`` keeps (the others limit nothing iowall reads).
SHOWN = ("cpu", "cpuacct", "memory", "blkio", "unified")
#: The limits a v1 blkio throttle file / v2 io.max key sets, by the name ``limits`` uses.
IO_KEYS = {
    "rbps": "blkio.throttle.read_bps_device",
    "wbps": "blkio.throttle.write_bps_device",
    "riops": "blkio.throttle.read_iops_device",
    "wiops": "blkio.throttle.write_iops_device",
}


@dataclass(frozen=True)
class Cgroups:
    """Where a task's cgroups are: controller -> absolute directory, and each one's version."""

    cpu: str | None  # dir holding cpu.stat with throttling (v1 cpu controller dir, or v2 dir)
    memory: str | None  # v1 memory controller dir or v2 dir (memory controller enabled there)
    io: str | None  # v1 blkio dir or v2 dir
    #: controller -> path inside its hierarchy, as /proc/PID/cgroup says ("unified" for v2;
    #: only the SHOWN ones)
    paths: dict[str, str]
    version: dict[str, int]  # "cpu"/"memory"/"io" -> 1 or 2
    #: v1 cpuacct dir (cpuacct.usage), the cpu dir when the two are mounted together
    cpuacct: str | None = None
    #: "cpu"/"memory"/"io"/"cpuacct" -> the mount point of its hierarchy: where limits stop
    #: being searched upwards (an ancestor's limit binds the leaf)
    roots: dict[str, str] = field(default_factory=dict)


class Mount(NamedTuple):
    """One cgroup or cgroup2 mount of mountinfo: its root in the hierarchy, where it is
    mounted, and (v1) the controllers of its hierarchy."""

    root: str
    point: str
    v2: bool
    controllers: frozenset[str]


def _unescape(path: str) -> str:
    """mountinfo's octal escapes (``\\040`` for a space)."""
    return path.encode().decode("unicode_escape") if "\\" in path else path


def parse_mountinfo(text: str) -> list[Mount]:
    """The cgroup and cgroup2 mounts of a /proc/PID/mountinfo text, in its order."""
    out = []
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        f, t = head.split(), tail.split()
        if not sep or len(f) < 5 or len(t) < 3 or t[0] not in ("cgroup", "cgroup2"):
            continue
        opts = frozenset(t[2].split(",")) if t[0] == "cgroup" else frozenset()
        out.append(Mount(_unescape(f[3]), _unescape(f[4]), t[0] == "cgroup2", opts))
    return out


def parse_membership(text: str) -> dict[str, str]:
    """/proc/PID/cgroup as controller -> path; the v2 line (``0::/x``) is ``unified``, a named
    v1 hierarchy is ``name=...``."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for c in parts[1].split(",") if parts[1] else ["unified"]:
            out[c] = parts[2]
    return out


def _dir(mount: Mount, path: str) -> str:
    """The directory of the group at ``path`` (as /proc/PID/cgroup says) under ``mount``."""
    rel = path
    if mount.root != "/" and (path == mount.root or path.startswith(mount.root + "/")):
        rel = path[len(mount.root) :]
    return os.path.normpath(mount.point + "/" + rel.strip("/")) if rel.strip("/") else mount.point


def _v1(mounts: list[Mount], controller: str) -> Mount | None:
    return next((m for m in mounts if not m.v2 and controller in m.controllers), None)


def locate_from(cgroup_text: str, mountinfo_text: str, v2_controllers: str | None = None) -> Cgroups:
    """Pure: the Cgroups of a /proc/PID/cgroup text under the mounts of a mountinfo text.
    ``v2_controllers`` is the v2 group's ``cgroup.controllers`` (None: every controller not
    bound to v1 is taken as enabled in v2)."""
    member, mounts = parse_membership(cgroup_text), parse_mountinfo(mountinfo_text)
    dirs: dict[str, str] = {}
    roots: dict[str, str] = {}
    version: dict[str, int] = {}
    for name, ctrl in (("cpu", "cpu"), ("cpuacct", "cpuacct"), ("memory", "memory"), ("io", "blkio")):
        m = _v1(mounts, ctrl)
        if m is not None and ctrl in member:
            dirs[name], roots[name], version[name] = _dir(m, member[ctrl]), m.point, 1
    v2 = next((m for m in mounts if m.v2), None)
    if v2 is not None and "unified" in member:
        enabled = set(v2_controllers.split()) if v2_controllers is not None else None
        bound = {c for m in mounts if not m.v2 for c in m.controllers}
        for name in ("cpu", "memory", "io"):
            free = name not in bound and not (name == "io" and "blkio" in bound)
            # cpu.stat (usage) is in every v2 group, whether the cpu controller is on or not
            if name not in dirs and free and (name == "cpu" or enabled is None or name in enabled):
                dirs[name], roots[name] = _dir(v2, member["unified"]), v2.point
                version[name] = 2
    version.pop("cpuacct", None)
    paths = {c: p for c, p in member.items() if c in SHOWN}
    return Cgroups(
        cpu=dirs.get("cpu"),
        memory=dirs.get("memory"),
        io=dirs.get("io"),
        paths=paths,
        version=version,
        cpuacct=dirs.get("cpuacct"),
        roots=roots,
    )


def read(path: str) -> str | None:
    """A cgroup file's text, or None when it is not there (or not readable)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def locate(pid: int | str = "self", *, proc: str = "/proc") -> Cgroups:
    """The cgroups of process ``pid`` (two small procfs reads, and the v2 group's
    ``cgroup.controllers`` on a system with a v2 hierarchy)."""
    cg_text = read(f"{proc}/{pid}/cgroup") or ""
    mi_text = read(f"{proc}/self/mountinfo") or ""
    member, v2 = parse_membership(cg_text), next((m for m in parse_mountinfo(mi_text) if m.v2), None)
    controllers = None
    if v2 is not None and "unified" in member:
        controllers = read(_dir(v2, member["unified"]) + "/cgroup.controllers")
    return locate_from(cg_text, mi_text, controllers)


# ------------------------------------------------------------------------------ parsers


def number(text: str | None) -> int | None:
    """A limit file's value: an int, or None for unlimited (``max``, -1, v1's near 2**63) or
    an absent file."""
    if text is None:
        return None
    t = text.strip()
    if not t or t == "max":
        return None
    try:
        v = int(t)
    except ValueError:
        return None
    return None if v < 0 or v >= V1_UNLIMITED else v


def keyed(text: str | None) -> dict[str, int]:
    """A flat keyed file (``cpu.stat``, ``memory.events``, ``memory.stat``): key -> int."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        k, _, v = line.partition(" ")
        try:
            out[k] = int(v)
        except ValueError:
            continue
    return out


def cpu_max(text: str | None) -> tuple[int, int] | None:
    """v2 ``cpu.max`` (``QUOTA PERIOD``, quota ``max`` for none) as (quota_us, period_us)."""
    parts = (text or "").split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    return int(parts[0]), int(parts[1])


def io_max(text: str | None) -> dict[str, dict[str, int]]:
    """v2 ``io.max`` lines (``8:0 rbps=max wbps=1048576 riops=max wiops=max``) as
    dev -> {key: limit}, only the keys that are set."""
    out: dict[str, dict[str, int]] = {}
    for line in (text or "").splitlines():
        dev, *pairs = line.split()
        lim = {k: int(v) for k, _, v in (p.partition("=") for p in pairs) if k in IO_KEYS and v.isdigit()}
        if lim:
            out[dev] = lim
    return out


def throttle_device(text: str | None) -> dict[str, int]:
    """A v1 ``blkio.throttle.*_device`` file (``8:0 1048576`` lines) as dev -> limit."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def io_stat_bytes(text: str | None) -> tuple[int, int]:
    """v2 ``io.stat``: rbytes and wbytes summed over the devices."""
    r = w = 0
    for line in (text or "").splitlines():
        for k, _, v in (p.partition("=") for p in line.split()[1:]):
            if k == "rbytes" and v.isdigit():
                r += int(v)
            elif k == "wbytes" and v.isdigit():
                w += int(v)
    return r, w


def service_bytes(text: str | None) -> tuple[int, int]:
    """v1 ``blkio.throttle.io_service_bytes``: the Read and Write lines summed over devices."""
    r = w = 0
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            r += int(parts[2]) if parts[1] == "Read" else 0
            w += int(parts[2]) if parts[1] == "Write" else 0
    return r, w


# ------------------------------------------------------------------------------ readers


def ancestors(leaf: str, root: str | None) -> Iterator[str]:
    """``leaf``, its parent, … up to ``root`` (the hierarchy's mount point) included; only
    ``leaf`` when ``root`` is unknown or not above it."""
    cur = os.path.normpath(leaf)
    top = os.path.normpath(root) if root else cur
    yield cur
    while cur != top and cur.startswith(top.rstrip("/") + "/"):
        cur = os.path.dirname(cur)
        yield cur


def _walk(cg: Cgroups, name: str) -> list[str]:
    leaf = getattr(cg, name)
    return list(ancestors(leaf, cg.roots.get(name))) if leaf else []


def cpu_limit(cg: Cgroups) -> tuple[float, int] | None:
    """The tightest CPU quota along the cpu group's path, as (CPUs, its period in us)."""
    best: tuple[float, int] | None = None
    for d in _walk(cg, "cpu"):
        if cg.version.get("cpu") == 2:
            qp = cpu_max(read(d + "/cpu.max"))
        else:
            q, p = number(read(d + "/cpu.cfs_quota_us")), number(read(d + "/cpu.cfs_period_us"))
            qp = (q, p) if q is not None and p else None
        if qp is not None and qp[1] > 0 and (best is None or qp[0] / qp[1] < best[0]):
            best = (qp[0] / qp[1], qp[1])
    return best


def _mem_file(cg: Cgroups, key: str) -> str:
    v1 = {"max": "memory.limit_in_bytes", "high": "", "usage": "memory.usage_in_bytes"}
    v2 = {"max": "memory.max", "high": "memory.high", "usage": "memory.current"}
    return (v2 if cg.version.get("memory") == 2 else v1)[key]


def mem_limit(cg: Cgroups, key: str = "max") -> int | None:
    """The smallest memory limit (``max``: hard; ``high``: v2's throttling one) along the
    memory group's path; None when none is set."""
    name = _mem_file(cg, key)
    vals = [v for d in _walk(cg, "memory") if name and (v := number(read(f"{d}/{name}"))) is not None]
    return min(vals) if vals else None


def io_limits(cg: Cgroups) -> list[dict[str, Any]]:
    """Per device, the tightest of each I/O throttle along the io group's path (None: none)."""
    found: dict[str, dict[str, int]] = {}
    for d in _walk(cg, "io"):
        if cg.version.get("io") == 2:
            per = io_max(read(d + "/io.max"))
        else:
            per = {}
            for key, fname in IO_KEYS.items():
                for dev, v in throttle_device(read(f"{d}/{fname}")).items():
                    per.setdefault(dev, {})[key] = v
        for dev, lim in per.items():
            cur = found.setdefault(dev, {})
            for k, v in lim.items():
                cur[k] = min(v, cur.get(k, v))
    return [{"dev": dev, **{k: lim.get(k) for k in IO_KEYS}} for dev, lim in sorted(found.items())]


def limits(cg: Cgroups) -> dict[str, Any]:
    """The limits in force on the task's groups (the tightest along each path up to the
    hierarchy's root): what a run records in ``env["cgroup"]``."""
    cpu = cpu_limit(cg)
    return {
        "cpu_quota_cpus": round(cpu[0], 4) if cpu else None,
        "cpu_period_us": cpu[1] if cpu else None,
        "mem_limit_bytes": mem_limit(cg, "max"),
        "mem_high_bytes": mem_limit(cg, "high"),
        "io_limits": io_limits(cg),
        "paths": dict(cg.paths),
    }


def _put(out: dict[str, float], key: str, value: float | None) -> None:
    if value is not None:
        out[key] = float(value)


def cpu_counters(cg: Cgroups) -> dict[str, float]:
    """Throttling and usage of the cpu group (v1 cpu.stat + cpuacct.usage; v2 cpu.stat)."""
    out: dict[str, float] = {}
    if cg.cpu is None:
        return out
    st = keyed(read(cg.cpu + "/cpu.stat"))
    _put(out, "cg_cpu_nr_periods", st.get("nr_periods"))
    _put(out, "cg_cpu_nr_throttled", st.get("nr_throttled"))
    if cg.version.get("cpu") == 2:
        _put(out, "cg_cpu_throttled_s", _scaled(st.get("throttled_usec"), 1e-6))
        _put(out, "cg_cpu_usage_s", _scaled(st.get("usage_usec"), 1e-6))
    else:
        _put(out, "cg_cpu_throttled_s", _scaled(st.get("throttled_time"), 1e-9))
        usage = number(read(f"{cg.cpuacct}/cpuacct.usage")) if cg.cpuacct else None
        _put(out, "cg_cpu_usage_s", _scaled(usage, 1e-9))
    return out


def _scaled(v: int | None, factor: float) -> float | None:
    return None if v is None else v * factor


def mem_counters(cg: Cgroups) -> dict[str, float]:
    """Usage and limit events of the memory group. v2: memory.current, memory.events (max,
    high, oom, oom_kill), memory.stat pgscan/pgsteal. v1: memory.usage_in_bytes, failcnt as
    the max events, memory.oom_control's oom_kill (and under_oom, an OOM in progress, counted
    as an OOM event); v1 has no high limit and no pgscan/pgsteal, so those are omitted."""
    out: dict[str, float] = {}
    d = cg.memory
    if d is None:
        return out
    usage = read(d + "/" + _mem_file(cg, "usage"))
    _put(out, "cg_mem_usage_bytes", int(usage) if usage and usage.strip().isdigit() else None)
    if cg.version.get("memory") == 2:
        ev, st = keyed(read(d + "/memory.events")), keyed(read(d + "/memory.stat"))
        for key, src in (("max", "max"), ("high", "high"), ("oom", "oom"), ("oom_kill", "oom_kill")):
            _put(out, f"cg_mem_{key}_events", ev.get(src))
        _put(out, "cg_mem_pgscan", st.get("pgscan"))
        _put(out, "cg_mem_pgsteal", st.get("pgsteal"))
    else:
        fail = read(d + "/memory.failcnt")
        _put(out, "cg_mem_max_events", int(fail) if fail and fail.strip().isdigit() else None)
        oc = keyed(read(d + "/memory.oom_control"))
        if "oom_kill" in oc:
            out["cg_mem_oom_events"] = float(oc["oom_kill"] + oc.get("under_oom", 0))
            out["cg_mem_oom_kill_events"] = float(oc["oom_kill"])
    return out


def io_counters(cg: Cgroups) -> dict[str, float]:
    """Bytes the io group read and wrote (v2 io.stat; v1 blkio.throttle.io_service_bytes,
    with its descendants when the kernel has the _recursive file)."""
    if cg.io is None:
        return {}
    if cg.version.get("io") == 2:
        text = read(cg.io + "/io.stat")
        rw = io_stat_bytes(text) if text is not None else None
    else:
        base = cg.io + "/blkio.throttle.io_service_bytes"
        text = read(base + "_recursive")
        text = text if text is not None else read(base)
        rw = service_bytes(text) if text is not None else None
    if rw is None:
        return {}
    return {"cg_io_read_bytes": float(rw[0]), "cg_io_write_bytes": float(rw[1])}


def counters(cg: Cgroups) -> dict[str, float]:
    """Cumulative counters of the task's groups, for a probe to difference (a few small
    reads: cheap enough every 100 ms); a counter whose file is missing is omitted, never 0."""
    return {**cpu_counters(cg), **mem_counters(cg), **io_counters(cg)}


# ------------------------------------------------------------------------------ memory room


@dataclass(frozen=True)
class MemoryRoom:
    """The memory group (or ancestor) that leaves the least room: its path in the hierarchy,
    the limit (the smaller of max and v2's high), what is in use, and how much of that is
    reclaimable file cache (inactive_file)."""

    path: str
    version: int
    limit_bytes: int
    usage_bytes: int
    reclaimable_bytes: int

    @property
    def free_bytes(self) -> int:
        """What can still be charged before the limit (reclaiming inactive file cache)."""
        return max(0, self.limit_bytes - self.usage_bytes + self.reclaimable_bytes)


def memory_room(cg: Cgroups) -> MemoryRoom | None:
    """The tightest memory room along the memory group's path, or None when no limit is set
    (memory a bed or a touch needs is charged to this process's group and all its ancestors)."""
    best: MemoryRoom | None = None
    v = cg.version.get("memory", 1)
    root = cg.roots.get("memory", "")
    for d in _walk(cg, "memory"):
        lims = [
            x
            for x in (number(read(f"{d}/{_mem_file(cg, k)}")) for k in ("max", "high") if _mem_file(cg, k))
            if x is not None
        ]
        if not lims:
            continue
        used = number(read(f"{d}/{_mem_file(cg, 'usage')}")) or 0
        st = keyed(read(d + "/memory.stat"))
        cache = st.get("inactive_file" if v == 2 else "total_inactive_file", 0)
        path = "/" + d[len(root) :].strip("/") if root and d.startswith(root) else d
        room = MemoryRoom(path, v, min(lims), used, min(cache, used))
        if best is None or room.free_bytes < best.free_bytes:
            best = room
    return best
