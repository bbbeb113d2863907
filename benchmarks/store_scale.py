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
import fcntl
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import text

from iowall.bundle.files import read_bundle
from iowall.model import Run, fingerprint
from iowall.store import Store, codec
from iowall.store.write import kind_ids

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import dashboard_pages  # noqa: E402  (beside this script, not a package)
from tests.pg import Cluster  # noqa: E402  (the suite's throw-away PostgreSQL)

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
    """What the cases may name: the store (a SQLite file or a PostgreSQL URL), how many runs
    it holds, a run id, labels, a batch with a stored report (None: none kept)."""

    db: str
    runs: int
    labels: tuple[str, ...]
    mid_id: int
    batch: str | None = None


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
        ("recipes (no store)", iowall("recipes")),
        ("runs (default page)", iowall("runs", *db)),
        ("runs --last 20", iowall("runs", "--last", "20", *db)),
        (f"runs --label X ({PER_LABEL})", iowall("runs", "--label", a, *db)),
        (
            "runs --status interrupted --last 20",
            iowall("runs", "--status", "interrupted", "--last", "20", *db),
        ),
        ("runs --kernel 6.6 (a 20th of the runs; newest 50)", iowall("runs", "--kernel", "6.6", *db)),
        ("runs --page 100 (runs 4,951-5,000 from the newest)", iowall("runs", "--page", "100", *db)),
        ("runs --before MID (the keyset page there)", iowall("runs", "--before", str(fx.mid_id), *db)),
        ("show RUN", iowall("show", str(fx.mid_id), *db)),
        (f"compare A B ({PER_LABEL} each)", iowall("compare", a, b, *db)),
        (f"history A B ({2 * PER_LABEL} runs)", iowall("history", a, b, *db)),
        (f"export X ({PER_LABEL})", iowall("export", a, "-o", "/dev/null", *db)),
    ]
    if fx.batch is not None:
        out.append((f"report BATCH (a plan's report, {PER_BATCH} runs)", iowall("report", fx.batch, *db)))
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


def keep_report(url: str, doc_json: str, batch_of: int) -> str:
    """Store the template's report for the batch of run ``batch_of``, naming that batch's
    runs (a plan's report over PER_BATCH runs); returns the batch."""
    store = Store(url)
    with store.engine.begin() as conn:
        batch = conn.execute(text("SELECT batch FROM runs WHERE id = :i"), {"i": batch_of}).scalar_one()
        ids = list(
            conn.execute(text("SELECT id FROM runs WHERE batch = :b ORDER BY id"), {"b": batch}).scalars()
        )
        doc = json.loads(doc_json)
        doc["batch"], doc["run_ids"] = batch, ids
        conn.execute(text("DELETE FROM reports WHERE batch = :b"), {"b": batch})
        conn.execute(
            text("INSERT INTO reports VALUES (:b, :k, :n, :l, :t, :d)"),
            {
                "b": batch,
                "k": doc.get("kind", "plan"),
                "n": doc.get("name", ""),
                "l": doc.get("label", ""),
                "t": time.time(),
                "d": json.dumps(doc),
            },
        )
    store.engine.dispose()
    return str(batch)


#: The columns of a runs row, in the order fill_rows gives them.
RUN_COLUMNS = (
    "id, uuid, batch, recipe, label, status, point_key, point_json, fingerprint, repeat_index, "
    "started_at, finished_at, host, kernel, env_json, bed_json, error, notes_json, env_ref, bed_ref"
)
#: Runs per transaction of the fill.
FILL_BATCH = 10_000


@dataclass
class Rows:
    """One transaction's rows of each table, as fill_rows makes them."""

    runs: list[tuple[Any, ...]]
    docs: list[tuple[Any, ...]]
    mets: list[tuple[Any, ...]]
    arts: list[tuple[Any, ...]]
    sers: list[tuple[Any, ...]]


def fill_rows(store: Store, templates: Sequence[Run], start: int, stop: int, seed: int = 1) -> Iterator[Rows]:
    """Runs ``start``..``stop``-1 cloned from ``templates`` with varied labels (PER_LABEL each),
    kernels, hosts, batches and values (metrics scaled by a few percent), FILL_BATCH runs of
    rows at a time. Artifacts and series are packed (codec) once per template, so a clone's
    stored bytes are a real run's (its series are the template's; only metrics are scaled);
    metrics and environments are packed as store.write.insert_run packs them (a host's
    environments as deltas against its first)."""
    rng = random.Random(seed + start)
    with store.engine.begin() as conn:
        kinds = kind_ids(conn, {(m.name, m.unit, m.direction) for t in templates for m in t.metrics})
    store.engine.dispose()
    packed = []
    for t in templates:
        t_arts = [(a.name, a.content_type, *codec.pack_body(a.body)) for a in t.artifacts]
        t_sers = codec.pack_series(t.series) if t.series else None
        t_mets = ([kinds[m.name, m.unit, m.direction] for m in t.metrics], [m.value for m in t.metrics])
        packed.append((t, t_arts, t_sers, t_mets))
    bases: dict[str, tuple[str, str]] = {}  # host → its environment kept whole (insert_run)
    for lo in range(start, stop, FILL_BATCH):
        rows = Rows([], [], [], [], [])
        for i in range(lo, min(stop, lo + FILL_BATCH)):
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
            rows.docs += [(env_ref, enc, data), (bed_ref, benc, bdata)]
            rows.runs.append(
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
            rows.mets.append((rid, *codec.pack_metrics(tm[0], [v * scale for v in tm[1]])))
            rows.arts += [(rid, *a) for a in parts]
            if ss is not None:
                rows.sers.append((rid, *ss))
        yield rows


def fill(db: Path, templates: Sequence[Run], start: int, stop: int, seed: int = 1) -> None:
    """fill_rows into a SQLite store: executemany, one transaction per FILL_BATCH runs."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    for rows in fill_rows(Store(str(db)), templates, start, stop, seed):
        with con:
            con.executemany(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({','.join('?' * 20)})", rows.runs)
            con.executemany("INSERT OR IGNORE INTO run_docs VALUES (?,?,?)", rows.docs)
            con.executemany("INSERT INTO run_metrics (run_id, encoding, data) VALUES (?,?,?)", rows.mets)
            con.executemany(
                "INSERT INTO artifacts (run_id, name, content_type, encoding, body, "
                "data) VALUES (?,?,?,?,?,?)",
                rows.arts,
            )
            con.executemany("INSERT INTO run_series (run_id, encoding, data) VALUES (?,?,?)", rows.sers)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("ANALYZE")
    con.close()


def fill_pg(url: str, templates: Sequence[Run], start: int, stop: int, seed: int = 1) -> None:
    """fill_rows into a PostgreSQL store: COPY, one transaction per FILL_BATCH runs (each
    document once: COPY knows no ON CONFLICT); then the id sequence moved past the runs and
    VACUUM ANALYZE, as autovacuum leaves a store that has been in use."""
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo) as con:
        seen = {ref for (ref,) in con.execute("SELECT ref FROM run_docs")}  # a fill before this one's
        for rows in fill_rows(Store(url), templates, start, stop, seed):
            docs = []
            for d in rows.docs:
                if d[0] not in seen:
                    seen.add(d[0])
                    docs.append(d)
            with con.transaction(), con.cursor() as cur:
                for table, cols, data in (
                    ("runs", RUN_COLUMNS, rows.runs),
                    ("run_docs", "ref, encoding, data", docs),
                    ("run_metrics", "run_id, encoding, data", rows.mets),
                    ("artifacts", "run_id, name, content_type, encoding, body, data", rows.arts),
                    ("run_series", "run_id, encoding, data", rows.sers),
                ):
                    with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as cp:
                        for r in data:
                            cp.write_row(r)
        con.execute("SELECT setval(pg_get_serial_sequence('runs', 'id'), (SELECT max(id) FROM runs))")
        con.commit()
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute("VACUUM ANALYZE")


def sizes(db: Path, n: int) -> list[str]:
    """Bytes per run: the whole file, then each table and index (dbstat)."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    con.close()
    out = [f"  file: {db.stat().st_size / n:,.0f} B/run ({db.stat().st_size / 2**20:,.1f} MiB)"]
    out += [f"  {name}: {size / n:,.0f} B/run" for name, size in rows if size / n >= 1]
    return out


def sizes_pg(url: str, n: int) -> list[str]:
    """Bytes per run of a PostgreSQL store: the database, then each table with its TOAST and
    indexes, and each index."""
    with psycopg.connect(url) as con:
        total = con.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        rows = con.execute(
            "SELECT c.relname, c.relkind, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') ORDER BY 3 DESC"
        ).fetchall()
    out = [f"  database: {total / n:,.0f} B/run ({total / 2**30:,.2f} GiB)"]
    out += [
        f"  {name} ({'table, TOAST and indexes' if kind == 'r' else 'index'}): {size / n:,.0f} B/run"
        for name, kind, size in rows
        if size / n >= 1
    ]
    return out


@contextmanager
def locked(path: str | None) -> Iterator[None]:
    """Hold ``path`` (flock, as ``flock(1)`` takes the suite's lock) while timing; nothing when
    None. The fill runs outside it."""
    if path is None:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def measure(fx: Fixture, reps: int, env: dict[str, str], every: bool, export_max: int) -> list[str]:
    """One line per case: median wall time of ``reps`` (after a warm-up) and peak RSS, with
    the load average when it ended; the every-run commands once each, after the others
    (their pages are warm by then)."""
    lines = []
    todo = [(c, reps) for c in cases(fx)] + ([(c, 1) for c in streamed(fx, export_max)] if every else [])
    for (name, argv), n in todo:
        if n > 1:
            timed(argv, env)  # warm the cache (an every-run command is timed once, as it is)
        got = [timed(argv, env) for _ in range(n)]
        wall = statistics.median(w for w, _ in got)
        rss = max(r for _, r in got)
        lines.append(f"| {fx.runs:,} | {name} | {wall:.2f} s | {rss / 1024:.0f} MiB | {load()} |")
        print(lines[-1], flush=True)
    return lines


def run_sizes(
    args: argparse.Namespace,
    env: dict[str, str],
    templates: Sequence[Run],
    doc: str | None,
    db: str,
    sizes_of: Callable[[int], list[str]],
    filler: Callable[[int, int], None],
) -> list[str]:
    """Fill ``db`` up to each of ``args.sizes`` in turn and time the commands (and pages) there."""
    done, report = 0, []
    for n in (int(x) for x in args.sizes.split(",")):
        t0 = time.perf_counter()
        filler(done, n)
        wall = time.perf_counter() - t0
        print(
            f"filled {done:,}..{n:,} in {wall:.0f} s ({(n - done) / wall:,.0f} runs/s; {load()})", flush=True
        )
        done = n
        size = sizes_of(n)
        report += [f"store of {n:,} runs:", *size]
        print("\n".join(report[-1 - len(size) :]), flush=True)
        labels = tuple(f"L{i:04d}" for i in range(2))
        batch = keep_report(db, doc, n // 2) if doc else None
        fx = Fixture(db, n, labels, n // 2, batch)
        with locked(args.lock):
            report.append(f"timing from {load()}")
            report += measure(fx, args.reps, env, n <= args.every_max, args.export_max)
            if args.pages:
                report += dashboard_pages.measure(db, n, env, labels, fx.mid_id, batch, args.reps)
            report.append(f"timing to {load()}")
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dir",
        type=Path,
        default=Path("/work/scale-tmp"),
        help="where the store files go (deleted at the end unless --keep)",
    )
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument(
        "--pg",
        action="store_true",
        help="PostgreSQL instead of SQLite: a throw-away cluster the script starts (tests/pg.py)",
    )
    ap.add_argument(
        "--pg-settings",
        default="-c shared_buffers=512MB",
        help="more server settings for that cluster (the suite's own are fsync off and 32 MB of buffers)",
    )
    ap.add_argument("--lock", help="hold this file (flock) while timing, e.g. /tmp/iowall-tests.lock")
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
    cluster = None
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
        if args.pg:
            cluster = Cluster()
            cluster.start(args.pg_settings)
            cluster.sql(
                "CREATE DATABASE scale TEMPLATE template0 LOCALE_PROVIDER icu "
                "ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
            )
            url = cluster.url("scale")
            Store(url).engine.dispose()  # the schema, at head
            report = run_sizes(
                args,
                env,
                templates,
                doc,
                url,
                lambda n: sizes_pg(url, n),
                lambda lo, hi: fill_pg(url, templates, lo, hi),
            )
        else:
            db = work / "scale.db"
            Store(str(db))  # the schema, at head
            report = run_sizes(
                args,
                env,
                templates,
                doc,
                str(db),
                lambda n: sizes(db, n),
                lambda lo, hi: fill(db, templates, lo, hi),
            )
        print("\n".join(report))
    finally:
        if cluster is not None:
            cluster.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
