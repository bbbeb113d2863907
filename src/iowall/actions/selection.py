"""Run selections as users write them on the command line: a label, ``field=value`` pairs,
run ids, or a bundle file, e.g. ``patched``, ``kernel=6.18.44,recipe=limits``, ``ids=3-9,12``,
``base.json`` or ``both.json:label=base``.

This module sits above ``store`` (the database) and ``bundle`` (bundle files): it reads
through them and neither imports it back."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..model import MEASURED_STATUSES, Run, run_uuid
from ..store import RunFilter, Store
from ..store.rows import kernel_matches
from ..vocab.errors import UserError

#: Fields a selection may name, as stored with every run.
FIELDS = ("label", "recipe", "batch", "status", "host", "kernel", "commit")


@dataclass(frozen=True)
class Selection:
    """One parsed selection: a filter over the store, or over the runs of a bundle file."""

    text: str
    flt: RunFilter
    bundle: str | None = None

    def describe(self) -> str:
        """How the selection reads in a report header."""
        return self.text


#: The most run ids one selection may list: each is one bound value of a SQL ``IN`` (SQLite
#: allows 32766), and a range such as 1-99999999999 would otherwise be built in memory.
MAX_IDS = 10_000
#: Store ids are SQL INTEGERs (signed 64-bit).
MAX_ID = 2**63 - 1


def run_id(text: str) -> int | None:
    """``text`` as a run id: ASCII digits within a SQL INTEGER, else None (a full-width ９ or
    a superscript ² is no id, nor is 99999999999999999999)."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 19:
        return None
    return int(t) if int(t) <= MAX_ID else None


def _id(text: str) -> int:
    rid = run_id(text)
    if rid is None:
        raise ValueError(text)
    return rid


def _ids(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (_id(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
            else:
                lo = hi = _id(part)
        except ValueError:
            raise UserError(f"run ids {text!r}: use numbers and ranges, e.g. ids=3,5-9") from None
        if len(out) + hi - lo + 1 > MAX_IDS:
            raise UserError(
                f"run ids {text!r}: more than {MAX_IDS} ids; select by label, batch or another field instead"
            )
        out += range(lo, hi + 1)
    return out


def _filter(text: str, terms: str) -> RunFilter:
    kw: dict[str, object] = {}
    merged: list[str] = []
    for term in terms.split(","):
        # ``ids=3,5-9``: a bare number after an ids term continues that term
        if (
            "=" not in term
            and merged
            and merged[-1].startswith("ids=")
            and term.strip().replace("-", "").isdigit()
        ):
            merged[-1] += "," + term
        else:
            merged.append(term)
    for term in merged:
        if "=" not in term:
            raise UserError(
                f"selection {text!r}: {term!r} is not FIELD=VALUE (fields: {', '.join(FIELDS)}, ids)"
            )
        k, v = (x.strip() for x in term.split("=", 1))
        if k == "ids":
            kw["ids"] = _ids(v)
        elif k in FIELDS:
            kw[k] = v
        else:
            raise UserError(f"selection {text!r}: unknown field {k!r} (fields: {', '.join(FIELDS)}, ids)")
    return RunFilter(**kw)  # type: ignore[arg-type]


def parse_selection(text: str) -> Selection:
    """Parse ``LABEL``, ``FIELD=V[,FIELD=V…]``, ``ids=…`` or ``FILE.json[:FIELD=V…]``."""
    text = text.strip()
    if not text:
        raise UserError("empty run selection")
    path, _, rest = text.partition(".json")
    if _ and (not rest or rest.startswith(":")):
        bundle = path + ".json"
        if not os.path.isfile(bundle):
            raise UserError(f"bundle {bundle}: no such file")
        flt = _filter(text, rest[1:]) if rest[1:] else RunFilter()
        return Selection(text, flt, bundle)
    if "=" in text:
        return Selection(text, _filter(text, text))
    # a bare id list reads as ids; anything else is a label
    if text.replace(",", "").replace("-", "").isdigit():
        return Selection(text, RunFilter(ids=_ids(text)))
    return Selection(text, RunFilter(label=text))


def matches(run: Run, flt: RunFilter) -> bool:
    """Whether a run (e.g. from a bundle) passes a filter, the same way the store applies it."""
    if flt.ids and run.id not in flt.ids:
        return False
    host = run.env.get("host", {})
    fields = {
        "label": run.label,
        "recipe": run.point.recipe,
        "batch": run.batch,
        "status": run.status,
        "kernel": str(run.env.get("kernel", "")),
        "host": str(host.get("hostname", "")) if isinstance(host, dict) else "",
        "commit": str(run.env.get("commit", "")),
    }
    if flt.kernel is not None and not kernel_matches(fields["kernel"], flt.kernel):
        return False
    return all(getattr(flt, k) is None or getattr(flt, k) == fields[k] for k in FIELDS if k != "kernel")


def load(
    store: Store | None,
    sel: Selection,
    *,
    measured_only: bool = True,
    with_series: bool = False,
    metrics: Callable[[str], bool] | None = None,
) -> list[Run]:
    """The runs a selection names, oldest first; by default only completed measurements.
    A UserError when it names none, so that a typo never compares against nothing.
    ``metrics``: which metrics to load from a store, by name (a bundle's runs keep all)."""
    if sel.bundle is not None:
        from ..bundle.files import read_bundle  # pydantic's models: only for bundle files

        runs = [r for r in read_bundle(sel.bundle) if matches(r, sel.flt)]
    else:
        if store is None:
            raise UserError(f"selection {sel.text!r} needs a store")
        runs = store.runs(sel.flt, with_series=with_series, metrics=metrics)
    if measured_only:
        runs = [r for r in runs if r.status in MEASURED_STATUSES]
    if not runs:
        where = sel.bundle or (store.shown if store else "")
        raise UserError(f"selection {sel.text!r} matches no completed runs in {where}")
    return runs


def store_only(text: str) -> str:
    """``text`` when it selects from the store; a UserError when it names a bundle file, raised
    before the file is looked at (the dashboard reads its store only: a URL must neither read
    files on the server nor tell which exist)."""
    _, json_, rest = text.strip().partition(".json")
    if json_ and (not rest or rest.startswith(":")):
        raise UserError(f"selection {text!r}: the dashboard reads its store only, not files")
    return text


def load_all(
    store: Store | None, texts: Sequence[str], *, metrics: Callable[[str], bool] | None = None
) -> list[tuple[Selection, list[Run]]]:
    """Several selections, each with its runs (with the metrics ``metrics`` keeps, as
    ``load``), in the order given."""
    out = []
    for t in texts:
        sel = parse_selection(t)
        out.append((sel, load(store, sel, metrics=metrics)))
    return out


def collect_runs(store: Store | None, selections: Sequence[str], *, measured_only: bool = False) -> list[Run]:
    """Whole runs (series and artifacts) named by ``selections`` (none = every stored run), in
    the order named, each once. A selection may be a bundle file: its runs pass through."""
    picked: list[tuple[bool, Run]] = []  # (from the store?, run)
    if not selections:
        if store is None:
            raise UserError("export needs a store or a selection")
        runs = [
            r
            for r in store.runs(RunFilter(), with_series=True)
            if not measured_only or r.status in MEASURED_STATUSES
        ]
        if not runs:
            raise UserError(f"no {'completed ' if measured_only else ''}runs to export in {store.shown}")
        picked = [(True, r) for r in runs]
    for text in selections:
        sel = parse_selection(text)
        picked += [
            (sel.bundle is None, r) for r in load(store, sel, measured_only=measured_only, with_series=True)
        ]
    out: list[tuple[bool, Run]] = []
    seen: set[str] = set()
    for from_store, r in picked:
        key = run_uuid(r)
        if key not in seen:
            seen.add(key)
            out.append((from_store, r))
    ids = [r.id for s, r in out if s and r.id is not None]
    arts = store.artifacts_of(ids) if store is not None and ids else {}
    return [replace(r, artifacts=arts.get(r.id, ())) if s and r.id is not None else r for s, r in out]


def compared_field(texts: list[str]) -> str:
    """The field the sides were chosen by (``label`` for plain labels)."""
    named: list[str] = []
    for t in texts:
        sel = parse_selection(t)
        if sel.bundle is not None and not any(getattr(sel.flt, f) for f in FIELDS):
            named.append("bundle")
            continue
        for f in (*FIELDS, "ids"):
            if getattr(sel.flt, f) and f not in named:
                named.append(f)
    return ",".join("host.hostname" if f == "host" else f for f in named) or "label"
