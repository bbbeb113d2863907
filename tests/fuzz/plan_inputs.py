"""Plan files to fuzz with: valid seeds (examples/*.toml, the complete plans in docs/plans.md,
the same with its partial tables merged in), a TOML writer for mutated documents, and the
strategy that mixes mutated plans, edited TOML text and raw text."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from iowall.plan.spec import BED_AXES, WORKLOAD_PARAMS, BedModel, FioModel, PlanModel

from .mutate import EDGE_TEXT, mutated, text_edits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def _seeds() -> list[dict[str, Any]]:
    """Every complete plan in examples/ and docs/plans.md, and each doc fragment ([bed],
    [axes], top-level keys) merged into the first example."""
    texts = [p.read_text() for p in sorted((ROOT / "examples").glob("*.toml"))]
    docs = (ROOT / "docs" / "plans.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", docs, re.S)
    plans = [tomllib.loads(t) for t in texts]
    base = plans[0]
    for b in blocks:
        doc = tomllib.loads(b)
        if "workload" in doc and ("size" in doc["workload"] or "jobfile" in doc["workload"]):
            plans.append(doc)
        else:
            merged = {**base, **{k: v for k, v in doc.items() if not isinstance(v, dict)}}
            for k, v in doc.items():
                if isinstance(v, dict):
                    merged[k] = {**base.get(k, {}), **v}
            plans.append(merged)
    return plans


SEEDS = _seeds()
KEYS = sorted(
    {
        *PlanModel.model_fields,
        *FioModel.model_fields,
        *BedModel.model_fields,
        *WORKLOAD_PARAMS,
        *BED_AXES,
        "numjobs",
        "sysctl:vm.dirty_ratio",
        "sysctl:vm.dirty_bytes",
        "sysctl:vm.no_such_knob",
        "sysctl:../x",
        "sysfs:queue/max_sectors_kb",
        "sysfs:/sys/kernel/mm/transparent_hugepage/enabled",
        "sysfs:/etc/passwd",
        "sysfs:../../x",
        "xfs:extsize",
        "xfs:other",
        "knob:x",
        "bz",
        "job",
        "Label",
        "probe",
    }
)
plausible = st.one_of(
    st.sampled_from(EDGE_TEXT),
    st.integers(-5, 70000),
    st.booleans(),
    st.sampled_from(["cpu", "vmstat", "flusher", "throttle", "default", "all", "none", "nosuchprobe"]).map(
        lambda p: [p]
    ),
    st.lists(
        st.one_of(st.integers(0, 64), st.sampled_from(["4k", "1M", "xfs", "ext4", "0", "1m", "64k", "16k"])),
        max_size=5,
    ),
    st.builds(
        lambda n, k: list(range(1, n + 1)) if k else [str(i) + "k" for i in range(n)],
        st.sampled_from([40, 300, 2000]),
        st.booleans(),
    ),
)


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def toml_value(v: Any) -> str:
    """A value in TOML syntax (inline tables for nested tables)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(str(v))


def toml_text(doc: dict[str, Any]) -> str:
    """A plan document as a TOML file: top-level keys, then one ``[table]`` per table."""
    out = [f"{_key(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            out.append(f"[{_key(k)}]")
            out += [f"{_key(str(kk))} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(out) + "\n"


@st.composite
def plan_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """(how it was made, the bytes of a plan file)."""
    how = draw(st.sampled_from(["seed", "mutated", "mutated", "mutated", "mutated+text", "text", "raw"]))
    if how == "raw":
        return how, draw(st.one_of(st.text(max_size=200).map(str.encode), st.binary(max_size=200)))
    doc = draw(st.sampled_from(SEEDS))
    if how != "seed" and how != "text":
        doc = draw(mutated(doc, KEYS, plausible))
    text = toml_text(doc)
    if how in ("text", "mutated+text"):
        return how, draw(text_edits(text))
    return how, text.encode()
