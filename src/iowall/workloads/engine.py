"""iowall-engine from Python: run the C engine as a separate process and return its JSON.

The engine prints one JSON object per line; an object with an ``error`` member ends a run
(it carries the errno, the path and the partial counts). Bad arguments make it exit 2
with one line on stderr.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..machine.proc import run_child
from ..vocab.errors import EngineError, UserError

PHASES = ("create", "walk", "chmod", "unlink")
METHODS = ("movsb", "memcpy", "best")
FSYNC_MODES = ("none", "close")
#: Exit status of the engine for bad arguments.
EXIT_USAGE = 2

Record = dict[str, Any]


class EngineRunError(EngineError):
    """The engine reported an error object: ``record`` is that object (errno, path, partial
    counts), ``records`` what it printed before it, so a caller can keep a filled run."""

    def __init__(self, message: str, record: Record, records: list[Record], returncode: int) -> None:
        super().__init__(message)
        self.record = record
        self.records = records
        self.returncode = returncode

    @property
    def errno_name(self) -> str | None:
        """The errno name the engine reported (``ENOSPC``), None for a logical error."""
        name = self.record.get("errno_name")
        return name if isinstance(name, str) else None


def engine_path() -> str:
    """Path of the ``iowall-engine`` binary built into the package (``iowall/_bin``)."""
    path = Path(__file__).resolve().parent.parent / "_bin" / "iowall-engine"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UserError(
            f"iowall-engine is missing at {path}: build it with "
            "'make -C engine OUT=$PWD/src/iowall/_bin' or reinstall iowall "
            "('make setup')"
        )
    return str(path)


def parse_output(stdout: str) -> list[Record]:
    """The engine's stdout as a list of JSON objects, one per non-empty line."""
    records: list[Record] = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise EngineError(f"iowall-engine printed a line that is not JSON: {line[:200]!r}") from e
        if not isinstance(obj, dict):
            raise EngineError(f"iowall-engine printed JSON that is not an object: {line[:200]!r}")
        records.append(obj)
    return records


def run_engine(
    args: Sequence[str], *, timeout: float | None = None, binary: str | None = None
) -> list[Record]:
    """Run ``iowall-engine ARGS`` to completion and return its JSON objects; raise
    UserError for rejected arguments, EngineRunError for an error object."""
    argv = [binary or engine_path(), *args]
    res = run_child(argv, timeout=timeout)
    if res.returncode == EXIT_USAGE:
        msg = res.stderr.strip().splitlines()
        raise UserError(msg[-1] if msg else f"iowall-engine rejected {' '.join(args)}")
    records = parse_output(res.stdout)
    for i, rec in enumerate(records):
        if "error" in rec:
            where = f" ({rec['path']})" if rec.get("path") else ""
            raise EngineRunError(
                f"iowall-engine {args[0]}: {rec['error']}{where}", rec, records[:i], res.returncode
            )
    if res.returncode != 0:
        tail = res.stderr.strip().splitlines()
        raise EngineError(
            f"iowall-engine {args[0]} exited with status {res.returncode}" + (f": {tail[-1]}" if tail else "")
        )
    if not records:
        raise EngineError(f"iowall-engine {args[0]} printed nothing")
    return records


def run_memcopy(
    threads: int,
    bytes_per_thread: int,
    passes: int = 5,
    method: str = "best",
    *,
    loops: int | None = None,
    timeout: float | None = None,
) -> Record:
    """Memory-copy ceiling: each thread copies its own buffer, best of ``passes``; bytes/s as
    perf bench mem memcpy counts them (bytes copied / s)."""
    if method not in METHODS:
        raise UserError(f"unknown memcopy method {method!r}: use {', '.join(METHODS)}")
    args = [
        "memcopy",
        "--threads",
        str(threads),
        "--bytes",
        str(bytes_per_thread),
        "--passes",
        str(passes),
        "--method",
        method,
    ]
    if loops is not None:
        args += ["--loops", str(loops)]
    return run_engine(args, timeout=timeout)[-1]


def run_meta(
    dir: str | os.PathLike[str],
    threads: int,
    files_per_thread: int,
    phases: Sequence[str] | str,
    dirs_per_thread: int | None = None,
    size: int = 0,
    shared_dir: bool = False,
    *,
    chmod_mode: int | None = None,
    timeout: float | None = None,
) -> list[Record]:
    """Metadata phases (create, walk, chmod, unlink) over per-thread trees under ``dir``;
    one record per phase, each with wall_s, files_per_s, CPU and per-thread counts."""
    names = phases.split(",") if isinstance(phases, str) else list(phases)
    bad = [p for p in names if p not in PHASES]
    if bad or not names:
        raise UserError(f"unknown meta phase(s) {bad}: use {', '.join(PHASES)}")
    args = [
        "meta",
        "--dir",
        os.fspath(dir),
        "--threads",
        str(threads),
        "--files-per-thread",
        str(files_per_thread),
        "--size",
        str(size),
        "--phases",
        ",".join(names),
    ]
    if dirs_per_thread is not None:
        args += ["--dirs-per-thread", str(dirs_per_thread)]
    if shared_dir:
        args.append("--shared-dir")
    if chmod_mode is not None:
        args += ["--chmod-mode", f"{chmod_mode:o}"]
    return run_engine(args, timeout=timeout)


def run_smallfiles(
    dir: str | os.PathLike[str],
    threads: int,
    size: int = 4096,
    *,
    seconds: float | None = None,
    files: int | None = None,
    fsync: str = "none",
    files_per_dir: int | None = None,
    timeout: float | None = None,
) -> Record:
    """Small-file stream through the page cache for ``seconds`` or until ``files`` exist
    (whichever comes first when both are given); the record has a per_second count series.
    ENOSPC raises EngineRunError (status filled)."""
    if seconds is None and files is None:
        raise UserError("run_smallfiles needs seconds=, files= or both")
    if fsync not in FSYNC_MODES:
        raise UserError(f"unknown fsync mode {fsync!r}: use none or close")
    args = [
        "smallfiles",
        "--dir",
        os.fspath(dir),
        "--threads",
        str(threads),
        "--size",
        str(size),
        "--fsync",
        fsync,
    ]
    if seconds is not None:
        args += ["--seconds", repr(float(seconds))]
    if files is not None:
        args += ["--files", str(files)]
    if files_per_dir is not None:
        args += ["--files-per-dir", str(files_per_dir)]
    return run_engine(args, timeout=timeout)[-1]
