"""The scaling report (iowall.report.scaling): the text table against a golden file, and the
Markdown, JSON and CSV shapes, on deterministic synthetic runs.

Regenerate the golden file after an intended change with
``IOWALL_UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/test_scaling_report.py`` and review the diff.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from iowall.analysis.scaling.sweep import Scaling, analyse
from iowall.analysis.scaling.usl import UslFit, usl
from iowall.model import Metric, Point, Run
from iowall.report.scaling import (
    fit_json,
    fit_lines,
    peak_sentence,
    render_csv,
    render_json,
    render_md,
    render_text,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "scaling_text.txt"
MIB = 1 << 20
#: Fixed run-to-run "noise" per repeat, so that the fit has residuals but is reproducible.
WOBBLE = (0.97, 1.0, 1.04)


def _runs(label: str, sigma: float, kappa: float, ns: list[int], first_id: int) -> list[Run]:
    out: list[Run] = []
    rid = first_id
    for rep, w in enumerate(WOBBLE):
        for k, n in enumerate(ns):
            x = float(usl(n, 400 * MIB, sigma, kappa)) * (w if (k + rep) % 2 else 2 - w)
            out.append(
                Run(
                    point=Point("limits", {"kind": "fio", "rw": "write", "direct": 0, "jobs": n, "bs": "2m"}),
                    label=label,
                    status="ok",
                    started_at=0.0,
                    finished_at=1.0,
                    metrics=(Metric("write_bw_bytes_per_s", x, "B/s"),),
                    bed={"kind": "ram", "fs": "xfs"},
                    id=rid,
                    repeat_index=rep,
                )
            )
            rid += 1
    return out


def scaling() -> Scaling:
    base = _runs("base", 0.03, 0.004, [1, 2, 4, 6, 8], 1)
    base += [
        Run(
            point=Point("limits", {"kind": "memcopy", "threads": t}),
            label="base",
            status="ok",
            started_at=0.0,
            finished_at=1.0,
            id=100 + t,
            metrics=(Metric("memcopy_bytes_per_s", 9e9 * t**0.7, "B/s"),),
        )
        for t in (1, 2, 4)
    ]
    patched = _runs("patched", 0.12, 0.0, [1, 2, 4, 6, 8], 201)
    return analyse([("base", base), ("patched", patched)])


def test_text_matches_golden() -> None:
    text = render_text(scaling())
    if os.environ.get("IOWALL_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_text_fits_80_columns_and_says_what_it_fits() -> None:
    text = render_text(scaling())
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "USL fit needs at least 4 thread counts, have 3" in text
    assert "Side by side" in text and "patched" in text
    assert "one run per N" in text  # memcopy: no repeats, no spread


def test_json_is_strict_and_complete() -> None:
    sc = scaling()
    doc = json.loads(json.dumps(render_json(sc), allow_nan=False))
    assert doc["schema_version"] == 1 and doc["labels"] == ["base", "patched"]
    assert len(doc["curves"]) == 3
    c = doc["curves"][0]
    assert c["metric"] == "write_bw_bytes_per_s" and c["axis"] == "jobs"
    assert [p["n"] for p in c["points"]] == [1, 2, 4, 6, 8]
    assert c["fit"]["sigma"] == pytest.approx(sc.curves[0].fit.sigma)  # type: ignore[union-attr]
    assert c["run_ids"] == sorted(c["run_ids"]) and len(c["run_ids"]) == 15
    assert doc["curves"][2]["fit"]["sigma"] > c["fit"]["sigma"]
    memcopy = doc["curves"][1]
    assert memcopy["fit"] is None and "have 3" in memcopy["fit_note"]
    sbs = {s["group"]: s for s in doc["side_by_side"]}
    assert [e["label"] for e in sbs["limits kind=fio"]["entries"]] == ["base", "patched"]
    assert [e["label"] for e in sbs["limits kind=memcopy"]["entries"]] == ["base"]


def test_csv_one_row_per_curve_and_n() -> None:
    sc = scaling()
    rows = list(csv.DictReader(io.StringIO(render_csv(sc))))
    assert len(rows) == sum(len(c.n) for c in sc.curves)
    first = rows[0]
    assert first["label"] == "base" and first["n"] == "1" and first["efficiency"] == "1.0"
    assert float(first["sigma"]) == pytest.approx(sc.curves[0].fit.sigma)  # type: ignore[union-attr]
    assert [r["n"] for r in rows if r["group"] == "limits kind=memcopy"] == ["1", "2", "4"]
    assert all(r["sigma"] == "" for r in rows if r["group"] == "limits kind=memcopy")


def _fit(sigma: float, kappa: float, dof: int = 2) -> UslFit:
    n_star = math.sqrt((1 - sigma) / kappa) if kappa else math.inf
    peak = 100.0 / sigma if not kappa and sigma else 50.0
    return UslFit(
        lam=100.0,
        sigma=sigma,
        kappa=kappa,
        lam_ci=(90.0, 110.0),
        sigma_ci=(0.0, math.inf) if dof == 0 else (0.0, 0.2),
        kappa_ci=(0.0, math.inf) if dof == 0 else (0.0, 0.01),
        n_star=n_star,
        x_peak=peak,
        r2=0.3,
        n_obs=dof + 3,
        dof=dof,
        confidence=0.95,
    )


def test_infinities_are_null_in_json_and_named_in_text() -> None:
    doc = fit_json(_fit(0.1, 0.0, dof=0))
    assert doc is not None
    json.dumps(doc, allow_nan=False)
    assert doc["n_star"] is None and doc["sigma_ci"] == [0.0, None]
    assert doc["x_peak"] == pytest.approx(1000.0)
    sc = scaling()
    c = sc.curves[0]
    assert peak_sentence(_fit(0.1, 0.0), c) == "no peak (κ = 0): throughput approaches λ/σ = 1KiB/s"
    assert peak_sentence(_fit(0.0, 0.0), c) == "no peak: the fit is linear (σ = κ = 0)"
    assert peak_sentence(_fit(0.1, 0.1), c).startswith("N* 3.0, predicted peak")
    lines = fit_lines(replace(c, fit=_fit(0.1, 0.1)))
    assert lines[-1].strip() == "poor fit (R² 0.30 < 0.5): σ and κ mean little here"


def test_markdown_tables() -> None:
    md = render_md(scaling())
    assert md.startswith("# iowall scaling\n")
    assert "| jobs | throughput | ± | efficiency | per job | runs |" in md
    assert "## Side by side" in md and "| curve | label | knee | σ | κ | N* | peak |" in md
