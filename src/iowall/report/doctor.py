"""What `iowall doctor` found: one line per check, what a missing piece disables and its fix;
text and JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .emit import Format, json_text, renders


@dataclass(frozen=True)
class Check:
    """One thing iowall needs: whether it is here, what its absence disables, the fix."""

    name: str
    ok: bool
    detail: str
    disables: str
    fix: str
    needed_by_limits: bool = False


@dataclass(frozen=True)
class Doctor:
    """Every check, in the order a user fixes them."""

    checks: tuple[Check, ...]

    @property
    def can_run_limits(self) -> bool:
        """Whether every check `iowall limits` needs passed."""
        return all(c.ok for c in self.checks if c.needed_by_limits)


@renders(Doctor, Format.text)
def _text(d: Doctor) -> str:
    out = []
    for c in d.checks:
        out.append(f"{'ok ' if c.ok else '-- '} {c.name:<32} {c.detail}")
        if not c.ok:
            out.append(f"     disables: {c.disables}; fix: {c.fix}")
    out += [
        "",
        "iowall limits can run."
        if d.can_run_limits
        else "iowall limits cannot run yet: fix the lines marked -- that it needs.",
    ]
    return "\n".join(out) + "\n"


@renders(Doctor, Format.json)
def _json(d: Doctor) -> str:
    return json_text({"can_run_limits": d.can_run_limits, "checks": [asdict(c) for c in d.checks]})
