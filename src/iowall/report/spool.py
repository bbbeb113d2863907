"""`iowall spool`: the runs waiting on this machine for a store that could not take them
(``bundle.spool``), and what an import of them did; text and JSON."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..vocab.units import fmt_bytes
from .emit import Format, json_text, renders
from .table import text_table


@dataclass(frozen=True)
class SpoolFile:
    """One spool file: the store it waits for (as shown), its path, its runs and bytes."""

    store: str
    path: Path
    runs: int
    size: int


@dataclass(frozen=True)
class SpoolList:
    """Every run waiting in the spool, file by file; ``imported``: runs added by an import
    just made (None when none was asked for)."""

    files: tuple[SpoolFile, ...]
    imported: int | None = None
    store: str = ""


@renders(SpoolList, Format.text)
def _text(s: SpoolList) -> str:
    out = []
    if s.imported is not None:
        out.append(f"imported {s.imported} run{'s' if s.imported != 1 else ''} from the spool into {s.store}")
    if not s.files:
        out.append("the spool is empty: every measured run is in its store")
        return "\n".join(out) + "\n"
    rows = [[f.store, str(f.path), str(f.runs), fmt_bytes(f.size)] for f in s.files]
    out.append(text_table(["store", "file", "runs", "size"], rows, left=2))
    out.append("  import them with: iowall spool --import [--db STORE]")
    return "\n".join(out) + "\n"


@renders(SpoolList, Format.json)
def _json(s: SpoolList) -> str:
    return json_text(
        {
            "imported": s.imported,
            "files": [
                {"store": f.store, "path": str(f.path), "runs": f.runs, "bytes": f.size} for f in s.files
            ],
        }
    )
