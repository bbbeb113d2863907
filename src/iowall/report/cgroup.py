"""The cgroup lines of `iowall show`: the limits the run's process was under, and where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.regress.cgroup_env import limits_text, paths_text


def cgroup_lines(env: Mapping[str, Any]) -> list[str]:
    """``cgroup    LIMITS`` and ``          paths …`` when a limit was set, else nothing."""
    doc = env.get("cgroup")
    text = limits_text(doc)
    if not text:
        return []
    paths = paths_text(doc)
    return [f"cgroup    {text}"] + ([f"          in {paths}"] if paths else [])
