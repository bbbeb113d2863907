"""Packed bundles written (schema_version 3, docs/bundle-format.md): each run as the store
keeps it (``store.packing.pack_run``), carrying only the documents and metric kinds that no
run before it in the bundle carried (bundle/packed.py reads them back); and the fields a run
has in plain and packed bundles alike (``common_doc``)."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from ..model import Run, run_uuid
from ..store import codec
from ..store.packing import Kind, pack_run

Doc = dict[str, Any]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def common_doc(run: Run, uuid: str, fingerprint: str) -> Doc:
    """The fields a run has in plain and packed bundles alike (``RunBase``)."""
    return {
        "uuid": uuid,
        "source_id": run.id,
        "label": run.label,
        "recipe": run.point.recipe,
        "point": dict(run.point.params),
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "batch": run.batch,
        "repeat_index": run.repeat_index,
        "error": run.error,
        "notes": list(run.notes),
        "fingerprint": fingerprint,
    }


class Writer:
    """Runs as a packed bundle's runs, one at a time (a bundle is written as a stream), each
    carrying the documents and metric kinds no run before it carried."""

    def __init__(self) -> None:
        self._docs: set[str] = set()
        self._bases: dict[str, tuple[str, str]] = {}  # host → (ref, text) of a whole document
        self._ids: dict[Kind, int] = {}

    def run_doc(self, run: Run) -> Doc:
        """``run`` as a packed bundle's run (its uuid ``run_uuid``'s, as a plain bundle's)."""
        uuid = run_uuid(run)
        p = pack_run(run if run.uuid == uuid else dataclasses.replace(run, uuid=uuid))
        row = p.row
        docs: dict[str, list[str]] = {}
        env = self._doc(row["env_json"], row["host"], docs)
        bed = self._doc(row["bed_json"], None, docs)
        kinds: dict[str, list[str]] = {}
        ids = []
        for kind, _ in p.metrics:
            i = self._ids.get(kind)
            if i is None:
                i = self._ids[kind] = len(self._ids) + 1
                kinds[str(i)] = list(kind)
            ids.append(i)
        metrics = None
        if p.metrics:
            enc, data = codec.pack_metrics(ids, [v for _, v in p.metrics])
            metrics = [enc, _b64(data)]
        return {
            **common_doc(run, uuid, row["fingerprint"]),
            "env": env,
            "bed": bed,
            "docs": docs,
            "kinds": kinds,
            "metrics": metrics,
            "series": [[s["encoding"], _b64(s["data"])] for s in p.series],
            "artifacts": [
                [
                    a["name"],
                    a["content_type"],
                    a["encoding"],
                    a["body"],
                    None if a["data"] is None else _b64(a["data"]),
                ]
                for a in p.artifacts
            ],
        }

    def _doc(self, text: str, host: str | None, docs: dict[str, list[str]]) -> str:
        """The ref of a document, packed into ``docs`` unless an earlier run carried it; an
        environment as a delta against its host's last whole one when that is smaller."""
        ref = codec.doc_ref(text)
        if ref in self._docs:
            return ref
        base = self._bases.get(host) if host is not None else None
        delta = codec.pack_delta(text, *base) if base is not None else None
        _, enc, data = delta or codec.pack_doc(text)
        if delta is None and host is not None:
            self._bases[host] = (ref, text)
        docs[ref] = [enc, _b64(data)]
        self._docs.add(ref)
        return ref
