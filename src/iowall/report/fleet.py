"""`iowall fleet run`'s table: one line per inventory host, what it added to the store or why
it failed."""

from __future__ import annotations

from dataclasses import dataclass

from ..results import IMPORTED, HostState
from .emit import Format, renders
from .table import text_table


@dataclass(frozen=True)
class Hosts:
    """The hosts of a fleet run, in inventory order."""

    states: tuple[HostState, ...]


@renders(Hosts, Format.text)
def _hosts_text(h: Hosts) -> str:
    rows = [
        [
            s.host,
            s.status,
            str(s.runs) if s.status == IMPORTED else "-",
            ", ".join(s.hostnames) or "-",
            s.error or "-",
        ]
        for s in h.states
    ]
    return text_table(["host", "status", "runs", "measured on", "error"], rows, left=5, indent=0) + "\n"
