"""What the engine benchmarks share: settling a filesystem between measured runs, and the
engine's user-CPU share (its own overhead) over all runs."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Sequence
from pathlib import Path

from iowall.machine.sysinfo import drop_caches as sync_and_drop


def quiesce(mnt: Path | None) -> None:
    """fsfreeze -f/-u on a block filesystem: it writes back the log and all dirty metadata,
    so no xfsaild or writeback work left by the previous run competes with the next."""
    if mnt is not None:
        subprocess.run(["fsfreeze", "-f", str(mnt)], check=True)
        subprocess.run(["fsfreeze", "-u", str(mnt)], check=True)


def drop_caches(mnt: Path | None = None) -> None:
    """Quiesce, sync, then drop the page cache, dentries and inodes (needs root)."""
    quiesce(mnt)
    if not sync_and_drop():
        raise SystemExit("benchmarks need root: cannot write /proc/sys/vm/drop_caches")


def user_share_line(phase: str, shares: Sequence[tuple[float, float]]) -> tuple[bool, str]:
    """Engine user CPU / (user + sys) summed over runs (getrusage, tick-sampled split):
    whether it is within the 10% target, and the line to print."""
    user, total = sum(u for u, _ in shares), sum(u + s for u, s in shares)
    ok = user <= 0.10 * total
    return ok, (
        f"engine user CPU / (user+sys) in {phase} on tmpfs, all runs: {user / total:.1%} "
        f"({user:.2f} of {total:.2f} CPU s, getrusage; target <= 10%)"
    )


def file_bench_args(doc: str) -> argparse.ArgumentParser:
    """The options the engine-vs-peer file benchmarks share."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer files and rounds")
    ap.add_argument("--fs", default="tmpfs,xfs", help="comma list: tmpfs, xfs")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--files-per-thread", type=int, default=None)
    return ap
