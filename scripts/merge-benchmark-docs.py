"""Assemble docs/benchmarks.md from the per-area figure files (kept so each area's author
can rerun and update its own section)."""

import pathlib

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
PARTS = [("benchmarks-engine.md", "The engine against its peers"),
         ("benchmarks-probes.md", "What the probes cost"),
         ("benchmarks-stats.md", "The compare rule against mmtests' and lkp's")]

out = ["# Benchmarks", "",
       "Scripts in `benchmarks/` measure iowall against its peers side by side in one run,",
       "interleaved, and print ratios. Each section says how to rerun it and what the machine",
       "was doing. Rebuild this page with `python3 scripts/merge-benchmark-docs.py`.", ""]
for name, title in PARTS:
    p = DOCS / name
    if not p.exists():
        continue
    body = p.read_text().splitlines()
    if body and body[0].startswith("# "):
        body = body[1:]
    out += [f"## {title}", ""] + [("#" + line if line.startswith("#") else line) for line in body]
    out.append("")
(DOCS / "benchmarks.md").write_text("\n".join(out).rstrip() + "\n")
