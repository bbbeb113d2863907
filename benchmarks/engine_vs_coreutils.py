"""Engine walk / chmod / unlink vs ``find -ls``, ``chmod -R`` and ``rm -rf``, interleaved.

The tree is the engine's (``meta create``, untimed): 2 threads, each with its own
``D/tNNN`` of N directories. The coreutils side runs one process per thread directory in
parallel, as the engine runs one thread per directory. Times are wall clock from spawning to
the exit of the last process, on both sides; the ratio is tool time / engine time, paired per
round, median. Before every measured run: ``sync; echo 3 > /proc/sys/vm/drop_caches``, for
both sides, after ``fsfreeze -f; fsfreeze -u`` on XFS so that the log and the dirty metadata
of the previous run are written back and no xfsaild or flusher work overlaps the next run
(cold dentry/inode caches on XFS; on tmpfs the drop cannot touch the tree). On XFS walk and
chmod are also measured warm (the tree just walked, untimed, then the same freeze, no drop).
chmod flips the file mode on every run (0600 <-> 0644), so every run changes every file. For
unlink both trees are made first, then removed in alternating order.

Also printed: the engine's user CPU share in unlink on tmpfs, and its peak RSS (wait4 of the
child) for a 1M-file create/walk/chmod/unlink on tmpfs.

    .venv/bin/python benchmarks/engine_vs_coreutils.py [--quick] [--fs tmpfs,xfs] [--rounds N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import drop_caches, file_bench_args, quiesce, user_share_line

from iowall.beds import BedSpec, provision
from iowall.workloads.engine import engine_path

THREADS = 2
TARGET = {"walk": 1.5, "chmod": 1.5, "unlink": 1.1}


def settle(state: str, mnt: Path | None, tree: Path, files: int, dirs: int) -> None:
    """Before a measured run: cold = quiesce + drop caches; warm = walk the tree (untimed),
    then quiesce."""
    if state == "cold":
        drop_caches(mnt)
    else:
        engine_run(tree, files, dirs, "walk")
        quiesce(mnt)


def spawn_all(argvs: Sequence[Sequence[str]]) -> tuple[float, list[Any], list[str]]:
    """Start every command at once, wait for all: (wall seconds, rusages, stdouts)."""
    outs = [tempfile.TemporaryFile(mode="w+") for _ in argvs]
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(list(a), stdout=o, stderr=subprocess.PIPE) for a, o in zip(argvs, outs, strict=True)
    ]
    usages = []
    for p in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        usages.append(ru)
    wall = time.perf_counter() - t0
    texts = []
    for p, a, o in zip(procs, argvs, outs, strict=True):
        o.seek(0)
        texts.append(o.read())
        o.close()
        err = p.stderr.read().decode() if p.stderr else ""
        if p.stderr:
            p.stderr.close()
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(a)} failed ({p.returncode}): {err}{texts[-1][-500:]}")
    return wall, usages, texts


def engine_argv(d: Path, files: int, dirs: int, phase: str, mode: int = 0o600) -> list[str]:
    return [
        engine_path(),
        "meta",
        "--dir",
        str(d),
        "--threads",
        str(THREADS),
        "--files-per-thread",
        str(files),
        "--dirs-per-thread",
        str(dirs),
        "--chmod-mode",
        f"{mode:o}",
        "--phases",
        phase,
    ]


def tool_argvs(d: Path, phase: str, mode: int = 0o600) -> list[list[str]]:
    tops = [str(d / f"t{t:03d}") for t in range(THREADS)]
    if phase == "walk":
        return [["sh", "-c", 'exec find "$1" -ls > /dev/null', "find", t] for t in tops]
    if phase == "chmod":
        return [["chmod", "-R", f"{mode:o}", t] for t in tops]
    return [["rm", "-rf", t] for t in tops]


@dataclass(frozen=True)
class Sample:
    """One measured run: wall seconds, and user and system CPU seconds of its processes."""

    wall: float
    user: float
    sys: float


def sample(wall: float, usages: list[Any]) -> Sample:
    return Sample(wall, sum(u.ru_utime for u in usages), sum(u.ru_stime for u in usages))


def engine_run(
    d: Path,
    files: int,
    dirs: int,
    phase: str,
    mode: int = 0o600,
) -> tuple[Sample, dict[str, Any]]:
    wall, usages, (out,) = spawn_all([engine_argv(d, files, dirs, phase, mode)])
    rec = json.loads(out.splitlines()[-1])
    if rec.get("files") != files * THREADS or "error" in rec:
        raise SystemExit(f"engine {phase}: {rec}")
    return sample(wall, usages), rec


def tool_run(d: Path, phase: str, mode: int = 0o600) -> Sample:
    wall, usages, _ = spawn_all(tool_argvs(d, phase, mode))
    return sample(wall, usages)


def peak_rss(d: Path, files: int) -> tuple[int, int]:
    """Peak RSS (KiB) of one engine run of every phase over THREADS x files files: ru_maxrss
    as /usr/bin/time reports it (a small launcher, so its exec does not lend the child
    Python's RSS), and the engine's own VmHWM from its JSON."""
    argv = [
        engine_path(),
        "meta",
        "--dir",
        str(d),
        "--threads",
        str(THREADS),
        "--files-per-thread",
        str(files),
        "--phases",
        "create,walk,chmod,unlink",
    ]
    with tempfile.NamedTemporaryFile(mode="r") as tf:
        _, _, (out,) = spawn_all([["/usr/bin/time", "-f", "%M", "-o", tf.name, *argv]])
        maxrss = int(tf.read().split()[-1])
    recs = [json.loads(x) for x in out.splitlines()]
    assert all(x["files"] == files * THREADS for x in recs), recs
    return maxrss, max(int(x["peak_rss_kib"]) for x in recs)


def main() -> int:
    a = file_bench_args(__doc__ or "").parse_args()
    if not os.access("/usr/bin/time", os.X_OK):
        raise SystemExit("/usr/bin/time not found: apt-get install time")
    files = a.files_per_thread or (20000 if a.quick else 30000)
    dirs = 2 if a.quick else 10
    rounds = a.rounds or (2 if a.quick else 5)
    rss_files = 100000 if a.quick else 500000
    print(
        f"{THREADS} threads x {files} files in {dirs} directories each, {rounds} rounds; "
        "tool wall / engine wall, paired per round, median [min-max]"
    )

    # (fs, phase, state) -> [(engine_s, tool_s)]
    res: dict[tuple[str, str, str], list[tuple[Sample, Sample]]] = {}
    unlink_share: list[tuple[float, float]] = []
    rss_kib = rss_self_kib = 0
    for fs in a.fs.split(","):
        spec = BedSpec.parse("tmpfs" if fs == "tmpfs" else "ram")
        kw = {} if fs == "tmpfs" else {"fs": fs}
        with provision(spec, size_bytes=4 << 30, **kw) as bed:
            root = Path(bed.path)
            mnt = None if fs == "tmpfs" else root  # tmpfs cannot be frozen
            w = root / "w"
            engine_run(w, files, dirs, "create")
            mode = 0o644
            states = ["cold", "warm"] if fs != "tmpfs" else ["cold"]

            for r in range(rounds):
                order = ("engine", "tool") if r % 2 == 0 else ("tool", "engine")
                for state in states:
                    for phase in ("walk", "chmod"):
                        got: dict[str, Sample] = {}
                        for who in order:
                            if phase == "chmod":
                                mode ^= 0o044
                            settle(state, mnt, w, files, dirs)
                            if who == "engine":
                                got[who], _ = engine_run(w, files, dirs, phase, mode)
                            else:
                                got[who] = tool_run(w, phase, mode)
                        res.setdefault((fs, phase, state), []).append((got["engine"], got["tool"]))
                # unlink: two identical trees made first, then each removed (cold)
                trees = {"engine": root / "ue", "tool": root / "ut"}
                for who in order:
                    engine_run(trees[who], files, dirs, "create")
                got = {}
                for who in order:
                    settle("cold", mnt, w, files, dirs)
                    if who == "engine":
                        got[who], rec = engine_run(trees[who], files, dirs, "unlink")
                        if fs == "tmpfs":
                            unlink_share.append((rec["user_s"], rec["sys_s"]))
                    else:
                        got[who] = tool_run(trees[who], "unlink")
                    assert not any(trees[who].iterdir())
                    trees[who].rmdir()
                res.setdefault((fs, "unlink", "cold"), []).append((got["engine"], got["tool"]))
                print(f"{fs}: round {r + 1}/{rounds} done", file=sys.stderr)
            engine_run(w, files, dirs, "unlink")
            if fs == "tmpfs":
                rss_kib, rss_self_kib = peak_rss(root / "rss", rss_files)

    ok = True
    names = {"walk": "find -ls", "chmod": "chmod -R", "unlink": "rm -rf"}
    print("wall s: median; cpu: median user+sys CPU seconds of all the side's processes;")
    print("ratio: tool wall / engine wall per round, median [min-max]")
    print(
        f"{'fs':6} {'phase':7} {'caches':6} {'engine s':>8} {'cpu u+s':>11} {'tool s':>8} "
        f"{'cpu u+s':>11} {'ratio':>6} {'[min-max]':>11}  target"
    )
    for (fs, phase, state), pairs in res.items():
        ratios = [t.wall / e.wall for e, t in pairs]
        med = statistics.median(ratios)
        tgt = TARGET[phase]
        good = med >= tgt
        ok = ok and good

        def cpu(xs: list[Sample]) -> str:
            return f"{statistics.median(x.user for x in xs):.2f}+{statistics.median(x.sys for x in xs):.2f}"

        es = [e for e, _ in pairs]
        ts = [t for _, t in pairs]
        print(
            f"{fs:6} {phase:7} {state:6} {statistics.median(x.wall for x in es):8.3f} "
            f"{cpu(es):>11} {statistics.median(x.wall for x in ts):8.3f} {cpu(ts):>11} "
            f"{med:6.2f} [{min(ratios):.2f}-{max(ratios):.2f}]  >= {tgt} vs {names[phase]} "
            f"{'ok' if good else 'BELOW'}"
        )
    if unlink_share:
        share_ok, line = user_share_line("unlink", unlink_share)
        ok = ok and share_ok
        print(line)
    if rss_kib:
        ok = ok and rss_kib <= 64 * 1024
        print(
            f"engine peak RSS, create+walk+chmod+unlink of {rss_files * THREADS:,} files on "
            f"tmpfs: {rss_kib / 1024:.1f} MiB (/usr/bin/time %M, ru_maxrss of the child; "
            f"its own VmHWM {rss_self_kib / 1024:.1f} MiB; target <= 64 MiB)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
