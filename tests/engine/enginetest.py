"""Helpers shared by the engine's tests (a module of its own: conftest is not importable)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ENGINE_SRC = REPO / "engine"


@dataclass
class Result:
    """What one engine run printed and returned."""

    rc: int
    records: list[dict[str, Any]]
    stdout: str
    stderr: str


def run_engine(binary: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> Result:
    """Run the engine and parse every stdout line as JSON (a test fails on any other line)."""
    cp = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=timeout)
    records = [json.loads(line) for line in cp.stdout.splitlines() if line.strip()]
    return Result(cp.returncode, records, cp.stdout, cp.stderr)


def tree(path: Path) -> tuple[list[Path], list[Path]]:
    """(files, directories) below path, found with os.scandir (directories not followed)."""
    files: list[Path] = []
    dirs: list[Path] = []
    stack = [path]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    dirs.append(Path(e.path))
                    stack.append(Path(e.path))
                else:
                    files.append(Path(e.path))
    return files, dirs
