"""The store at scale: fill a SQLite store with 1k, 10k and 100k realistic runs (cloned from a
few real runs made here by ``iowall run``), then time the reader's commands on it.

Each command runs as a subprocess (median of --reps, warm cache, after one unmeasured warm-up)
and its peak RSS is read from wait4(). Bytes per run: the file's size over its runs, and each
table's and index's share (SQLite's dbstat). Run the timing as root under the suite's lock:

    flock /tmp/iowall-tests.lock python benchmarks/store_scale.py --dir /work/scale-tmp

The templates need a RAM bed (root). ``--templates BUNDLE`` takes them from a bundle instead,
``--template-db DB`` from the store an earlier run made (with the plan's stored report, which
is then kept for a batch of the big store: the report page). ``--pages`` also times the
dashboard (benchmarks/dashboard_pages.py: server time and first paint in chromium).
Other commands can be timed too: append a function to ``HOOKS`` (it gets the Fixture, returns
``(name, argv)`` cases run like the rest).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowall.model import Run, fingerprint
from iowall.store import Store, codec
from iowall.store.bundle import read_bundle
from iowall.store.db import kind_ids

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dashboard_pages  # noqa: E402  (beside this script, not a package)

SRC = Path(__file__).resolve().parent.parent / "src"
#: Runs per label: `runs --label X` and a compare side select this many at every size.
PER_LABEL = 500
#: Environment numbers that differ from run to run on a real machine.
VARYING_ENV = ("dirty_threshold_bytes", "dirty_background_threshold_bytes")
#: Runs per batch (one invocation).
PER_BATCH = 50

PLAN = """# store_scale templates: a small buffered write and read, default probes
label = "template"
repeat = 1
probes = ["default"]
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "256M"
direct = 0
[bed]
kind = "ram"
fs = "xfs"
size = "1G"
[axes]
jobs = [1, 2]
direct = [0, 1]
"""


@dataclass(frozen=True)
class Fixture:
    """What the cases may name: the store, how many runs it holds, a run id, labels."""

    db: Path
    runs: int
    labels: tuple[str, ...]
    mid_id: int


Case = tuple[str, list[str]]
#: Extra cases (e.g. the dashboard's pages): each gets the Fixture and returns (name, argv).
HOOKS: list[Callable[[Fixture], list[Case]]] = []


def iowall(*args: str) -> list[str]:
    return [sys.executable, "-m", "iowall", *args]


def cases(fx: Fixture) -> list[Case]:
    """The commands timed at every size."""
    db = ["--db", str(fx.db)]
    a, b = fx.labels[0], fx.labels[1]
    out = [
        ("start-up: iowall --version (no store)", iowall("--version")),
        ("runs (default page)", iowall("runs", *db)),
        ("runs --last 20", iowall("runs", "--last", "20", *db)),
        (f"runs --label X ({PER_LABEL})", iowall("runs", "--label", a, *db)),
        (
            "runs --status interrupted --last 20",
            iowall("runs", "--status", "interrupted", "--last", "20", *db),
        ),
        ("show RUN", iowall("show", str(fx.mid_id), *db)),
        (f"compare A B ({PER_LABEL} each)", iowall("compare", a, b, *db)),
        (f"history A B ({2 * PER_LABEL} runs)", iowall("history", a, b, *db)),
        (f"export X ({PER_LABEL})", iowall("export", a, "-o", "/dev/null", *db)),
    ]
    for hook in HOOKS:
        out += hook(fx)
    return out


def streamed(fx: Fixture, export_max: int) -> list[Case]:
    """Commands over every run (one timing each): their memory must not grow with the store
    (the export of every run only up to ``export_max`` runs: about 3.5 ms a run)."""
    db = ["--db", str(fx.db)]
    out = [("runs --format csv (every run)", iowall("runs", "--format", "csv", *db))]
    if fx.runs <= export_max:
        out.append(("export (every run)", iowall("export", "-o", "/dev/null", *db)))
    return out


def timed(argv: Sequence[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run of ``argv``; output discarded. The RSS is
    GNU time's (%M): a child forked from this process would report this process's own peak
    (Linux keeps the high-water mark across fork and exec), which the fill has made large."""
    with tempfile.NamedTemporaryFile("r", prefix="store-scale-rss-") as rss:
        t0 = time.perf_counter()
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.decode()[-400:]}")
        return wall, int(rss.read().split()[-1])


def make_templates(work: Path, env: dict[str, str]) -> Path:
    """Real runs: ``iowall run`` of PLAN into a private store (needs root for the RAM bed)."""
    plan, db = work / "template.toml", work / "template.db"
    plan.write_text(PLAN)
    subprocess.run(iowall("run", str(plan), "--db", str(db)), env=env, check=True, stdout=subprocess.DEVNULL)
    return db


def template_runs(db: Path) -> tuple[list[Run], str | None]:
    """The ok runs of a template store, whole, and its (plan's) stored report document."""
    s = Store(str(db))
    runs = [s.get_run(r.id) for r in s.runs() if r.id is not None and r.status == "ok"]
    con = sqlite3.connect(db)
    row = con.execute("SELECT doc_json FROM reports ORDER BY created_at LIMIT 1").fetchone()
    con.close()
    return runs, (row[0] if row else None)


def keep_report(db: Path, doc_json: str, batch_of: int) -> str:
    """Store the template's report for the batch of run ``batch_of``, naming that batch's
    runs (a plan's report over PER_BATCH runs); returns the batch."""
    con = sqlite3.connect(db)
    batch = con.execute("SELECT batch FROM runs WHERE id = ?", (batch_of,)).fetchone()[0]
    ids = [i for (i,) in con.execute("SELECT id FROM runs WHERE batch = ? ORDER BY id", (batch,))]
    doc = json.loads(doc_json)
    doc["batch"], doc["run_ids"] = batch, ids
    with con:
        con.execute(
            "INSERT OR REPLACE INTO reports VALUES (?,?,?,?,?,?)",
            (
                batch,
                doc.get("kind", "plan"),
                doc.get("name", ""),
                doc.get("label", ""),
                time.time(),
                json.dumps(doc),
            ),
        )
    con.close()
    return batch


def fill(db: Path, templates: Sequence[Run], start: int, stop: int, seed: int = 1) -> None:
    """Runs ``start``..``stop``-1 cloned from ``templates`` with varied labels (PER_LABEL each),
    kernels, hosts, batches and values (metrics scaled by a few percent), bulk
    inserted with executemany in one transaction per 10k runs. Artifacts and series are
    packed (codec) once per template, so a clone's stored bytes are a real run's (its series
    are the template's; only metrics are scaled); metrics and environments are packed as
    Store._insert packs them (a host's environments as deltas against its first)."""
    rng = random.Random(seed + start)
    store = Store(str(db))
    with store.engine.begin() as conn:
        kinds = kind_ids(conn, {(m.name, m.unit, m.direction) for t in templates for m in t.metrics})
    store.engine.dispose()
    packed = []
    for t in templates:
        t_arts = [(a.name, a.content_type, *codec.pack_body(a.body)) for a in t.artifacts]
        t_sers = codec.pack_series(t.series) if t.series else None
        t_mets = ([kinds[m.name, m.unit, m.direction] for m in t.metrics], [m.value for m in t.metrics])
        packed.append((t, t_arts, t_sers, t_mets))
    bases: dict[str, tuple[str, str]] = {}  # host → its environment kept whole (Store._insert)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    for lo in range(start, stop, 10_000):
        runs: list[tuple[Any, ...]] = []
        mets: list[tuple[Any, ...]] = []
        arts: list[tuple[Any, ...]] = []
        sers: list[tuple[Any, ...]] = []
        docs: list[tuple[Any, ...]] = []
        for i in range(lo, min(stop, lo + 10_000)):
            t, parts, ss, tm = packed[i % len(packed)]
            lab = i // PER_LABEL
            kernel = f"6.{lab % 20}.{lab % 7}-scale{lab}"
            host = dict(t.env.get("host", {}), hostname=f"host{lab % 8}")
            env = dict(t.env, kernel=kernel, host=host)
            for k in VARYING_ENV:  # as a real run's: its dirty thresholds follow free memory
                if isinstance(env.get(k), int):
                    env[k] = int(env[k] * rng.uniform(0.999, 1.001))
            scale = rng.lognormvariate(0.0, 0.03)
            status = "failed" if rng.random() < 0.02 else "interrupted" if rng.random() < 0.01 else "ok"
            started = 1.7e9 + i * 60.0
            rid = i + 1
            env_text = json.dumps(env, sort_keys=True, default=str)
            delta = (
                codec.pack_delta(env_text, *bases[host["hostname"]]) if host["hostname"] in bases else None
            )
            env_ref, enc, data = delta or codec.pack_doc(env_text)
            if delta is None:
                bases[host["hostname"]] = (env_ref, env_text)
            bed_ref, benc, bdata = codec.pack_doc(json.dumps(t.bed, sort_keys=True, default=str))
            docs += [(env_ref, enc, data), (bed_ref, benc, bdata)]
            runs.append(
                (
                    rid,
                    str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    f"batch-{i // PER_BATCH:06d}",
                    t.point.recipe,
                    f"L{lab:04d}",
                    status,
                    t.point.key(),
                    json.dumps(dict(t.point.params), sort_keys=True),
                    fingerprint(t.point, t.bed, env),
                    i % 5,
                    started,
                    started + (t.finished_at - t.started_at),
                    host["hostname"],
                    kernel,
                    "",
                    "",
                    "fio exited 1" if status == "failed" else "",
                    json.dumps(list(t.notes)),
                    env_ref,
                    bed_ref,
                )
            )
            mets.append((rid, *codec.pack_metrics(tm[0], [v * scale for v in tm[1]])))
            arts += [(rid, *a) for a in parts]
            if ss is not None:
                sers.append((rid, *ss))
        with con:
            con.executemany(
                "INSERT INTO runs (id, uuid, batch, recipe, label, status, point_key,"
                " point_json, fingerprint, repeat_index, started_at, finished_at, "
                "host, kernel, env_json, bed_json, error, notes_json, env_ref, "
                f"bed_ref) VALUES ({','.join('?' * 20)})",
                runs,
            )
            con.executemany("INSERT OR IGNORE INTO run_docs VALUES (?,?,?)", docs)
            con.executemany("INSERT INTO run_metrics (run_id, encoding, data) VALUES (?,?,?)", mets)
            con.executemany(
                "INSERT INTO artifacts (run_id, name, content_type, encoding, body, "
                "data) VALUES (?,?,?,?,?,?)",
                arts,
            )
            con.executemany("INSERT INTO run_series (run_id, encoding, data) VALUES (?,?,?)", sers)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("ANALYZE")
    con.close()


def sizes(db: Path, n: int) -> list[str]:
    """Bytes per run: the whole file, then each table and index (dbstat)."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    con.close()
    out = [f"  file: {db.stat().st_size / n:,.0f} B/run ({db.stat().st_size / 2**20:,.1f} MiB)"]
    out += [f"  {name}: {size / n:,.0f} B/run" for name, size in rows if size / n >= 1]
    return out


def measure(fx: Fixture, reps: int, env: dict[str, str], every: bool, export_max: int) -> list[str]:
    """One line per case: median wall time of ``reps`` (after a warm-up) and peak RSS; the
    every-run commands once each, after the others (their pages are warm by then)."""
    lines = []
    todo = [(c, reps) for c in cases(fx)] + ([(c, 1) for c in streamed(fx, export_max)] if every else [])
    for (name, argv), n in todo:
        if n > 1:
            timed(argv, env)  # warm the cache (an every-run command is timed once, as it is)
        got = [timed(argv, env) for _ in range(n)]
        wall = statistics.median(w for w, _ in got)
        rss = max(r for _, r in got)
        lines.append(f"| {fx.runs:,} | {name} | {wall:.2f} s | {rss / 1024:.0f} MiB |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dir",
        type=Path,
        default=Path("/work/scale-tmp"),
        help="where the store files go (deleted at the end unless --keep)",
    )
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--templates", metavar="BUNDLE", help="take template runs from a bundle")
    ap.add_argument(
        "--template-db",
        metavar="DB",
        type=Path,
        help="take template runs and a report from a store made by this script",
    )
    ap.add_argument("--pages", action="store_true", help="time the dashboard's pages too")
    ap.add_argument(
        "--every-max",
        type=int,
        default=100_000,
        help="time the every-run commands (csv, export) up to this store size",
    )
    ap.add_argument(
        "--export-max", type=int, default=100_000, help="time the export of every run up to this store size"
    )
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(SRC))
    args.dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="store-scale-", dir=args.dir))
    try:
        doc = None
        if args.templates:
            templates = read_bundle(args.templates)
        else:
            templates, doc = template_runs(args.template_db or make_templates(work, env))
        print(
            f"templates: {len(templates)} runs, "
            f"{statistics.mean(len(t.metrics) for t in templates):.0f} metrics, "
            f"{statistics.mean(len(t.series) for t in templates):.0f} series, "
            f"{statistics.mean(sum(len(a.body) for a in t.artifacts) for t in templates):,.0f}"
            " artifact bytes each",
            flush=True,
        )
        db = work / "scale.db"
        Store(str(db))  # the schema, at head
        done, report = 0, []
        for n in (int(x) for x in args.sizes.split(",")):
            t0 = time.perf_counter()
            fill(db, templates, done, n)
            print(f"filled {done:,}..{n:,} in {time.perf_counter() - t0:.0f} s", flush=True)
            done = n
            report += [f"store of {n:,} runs:", *sizes(db, n)]
            print("\n".join(report[-1 - len(sizes(db, n)) :]), flush=True)
            labels = tuple(f"L{i:04d}" for i in range(2))
            fx = Fixture(db, n, labels, n // 2)
            report += measure(fx, args.reps, env, n <= args.every_max, args.export_max)
            if args.pages:
                batch = keep_report(db, doc, fx.mid_id) if doc else None
                report += dashboard_pages.measure(db, n, env, labels, fx.mid_id, batch, args.reps)
        print("\n".join(report))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
