"""The import rate (issue 27): ``iowall import`` of bundles of 500 realistic runs into SQLite
and PostgreSQL, the tree under test beside an older one (``--old SRC``), with the store's
own batched fill (store_scale.fill) and ``db copy`` beside them.

The runs are clones of real runs (store_scale's templates, as its fill makes them: labels of
500, 8 hosts, 20 kernels, metrics scaled, each environment its own), written as bundles
first. Each import is a subprocess timed whole (start-up, reading and validating the JSON,
writing); "in process" times ``import_runs`` alone on runs already read. PostgreSQL is a
throw-away cluster the script starts (tests/pg.py: fsync off). Run under the suite's lock:

    flock /tmp/iowall-tests.lock env PYTHONPATH=src python benchmarks/import_rate.py \\
        --template-db TEMPLATE.db --old OLD/src
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from sqlalchemy import text

from iowall.bundle.files import as_run, read_bundle, read_models, write_bundle
from iowall.bundle.pool import packed_parts
from iowall.model import Run
from iowall.store import Store
from iowall.store.ingest import import_runs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import store_scale  # noqa: E402  (beside this script)
from tests.pg import Cluster, bindir  # noqa: E402  (the suite's throw-away PostgreSQL)

SRC = HERE.parent / "src"
#: Runs per bundle: what the issue's 100,000-run load imported a call.
PER_BUNDLE = 500


def clones(templates: Sequence[Run], lo: int, hi: int, rng: random.Random) -> Iterator[Run]:
    """Runs ``lo``..``hi``-1 as store_scale.fill varies them, each with its own uuid."""
    for i in range(lo, hi):
        t = templates[i % len(templates)]
        lab = i // store_scale.PER_LABEL
        host = dict(t.env.get("host", {}), hostname=f"host{lab % 8}")
        env = dict(t.env, kernel=f"6.{lab % 20}.{lab % 7}-scale{lab}", host=host)
        for k in store_scale.VARYING_ENV:
            if isinstance(env.get(k), int):
                env[k] = int(env[k] * rng.uniform(0.999, 1.001))
        scale = rng.lognormvariate(0.0, 0.03)
        yield dataclasses.replace(
            t,
            env=env,
            label=f"L{lab:04d}",
            uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            batch=f"batch-{i // store_scale.PER_BATCH:06d}",
            metrics=tuple(dataclasses.replace(m, value=m.value * scale) for m in t.metrics),
            id=i + 1,
        )


def timed(argv: list[str], src: Path) -> float:
    """Wall seconds of one subprocess run on the tree ``src``; output checked, discarded."""
    env = dict(os.environ, PYTHONPATH=str(src))
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr[-400:]}")
    return wall


def iowall(*args: str) -> list[str]:
    return [sys.executable, "-m", "iowall", *args]


def line(backend: str, tree: str, what: str, runs: int, wall: float) -> str:
    out = f"| {backend} | {tree} | {what} | {runs:,} | {wall:.2f} s | {runs / wall:,.0f} runs/s |"
    print(out, flush=True)
    return out


def measure(
    backend: str,
    new_url: Callable[[], str],
    files: list[str],
    trees: dict[str, Path],
    form: str = "plain",
    old_packed: bool = False,
) -> list[str]:
    """Each tree: one import per bundle into a new store, then every bundle again in one
    call (nothing to add); the tree under test also all bundles in one call into a new
    store, in process, and a db copy of it. ``form``: the bundles' (plain or packed: an
    older tree reads packed ones only with ``old_packed``, from 1d3bc5d on)."""
    out = []
    n = PER_BUNDLE * len(files)
    if form == "packed" and not old_packed:
        trees = {"new": SRC}
    for tree, src in trees.items():
        url = new_url()
        walls = [timed(iowall("import", f, "--db", url), src) for f in files]
        out.append(line(backend, tree, f"import, a {PER_BUNDLE}-run {form} bundle a call", n, sum(walls)))
        out.append(
            line(
                backend,
                tree,
                f"the same {form} bundles again (all present), one call",
                n,
                timed(iowall("import", *files, "--db", url), src),
            )
        )
    url = new_url()
    out.append(
        line(
            backend,
            "new",
            f"import, {len(files)} {form} bundles in one call",
            n,
            timed(iowall("import", *files, "--db", url), SRC),
        )
    )
    runs = [p for _, part in packed_parts(files) for p in part]  # as `iowall import` reads them
    store = Store(new_url())
    t0 = time.perf_counter()
    assert import_runs(store, runs, pack=lambda p, _: p) == (n, 0)
    out.append(
        line(
            backend,
            "new",
            f"in process: writing {form} runs already read and packed",
            n,
            time.perf_counter() - t0,
        )
    )
    store.engine.dispose()
    if form == "plain":
        for tree, src in trees.items():
            out.append(
                line(
                    backend,
                    tree,
                    "db copy of that store",
                    n,
                    timed(iowall("db", "copy", url, new_url()), src),
                )
            )
    return out


def measure_many(
    backend: str, new_url: Callable[[], str], files: list[str], trees: dict[str, Path], rounds: int = 2
) -> list[str]:
    """All ``files`` (packed) in one call into a new store, and their runs as one file: the
    rate once past the start-up, each tree in turn, ``rounds`` times (the host's noise is
    20-40%: the rounds show it)."""
    n = PER_BUNDLE * len(files)
    one = str(Path(files[0]).with_name("one.json"))  # the same runs in one file
    if not os.path.exists(one):
        write_bundle([as_run(r) for f in files for r in read_models(f)], one, packed=True)
    return [
        line(
            backend,
            tree,
            what,
            n,
            timed(iowall("import", *fs, "--db", new_url()), src),
        )
        for _ in range(rounds)
        for what, fs in (
            (f"import, {len(files)} packed bundles in one call", files),
            (f"import, one packed bundle of {n:,} runs", [one]),
        )
        for tree, src in trees.items()
    ]


def measure_copy(
    backend: str, new_url: Callable[[], str], big: Path, runs: int, trees: dict[str, Path]
) -> list[str]:
    """``db copy`` of a store of ``runs`` runs (store_scale.fill) into a new store of
    ``backend``, and, on PostgreSQL, from there into a new SQLite file, each tree."""
    out = []
    for tree, src in trees.items():
        url = new_url()
        wall = timed(iowall("db", "copy", str(big), url), src)
        out.append(line(backend, tree, f"db copy of {runs:,} runs from SQLite", runs, wall))
        if backend == "PostgreSQL":
            back = big.with_name(f"back-{tree}.db")
            wall = timed(iowall("db", "copy", url, str(back)), src)
            out.append(line("SQLite", tree, f"db copy of {runs:,} runs from PostgreSQL", runs, wall))
    return out


def measure_concurrent(backend: str, url: str, files: list[str], importers: int) -> list[str]:
    """``importers`` ``iowall import`` processes started at once into one new store, each with
    its own two packed bundles and one bundle every one of them has (the same runs, taken
    by whichever comes first): the wall until the last is done, and a check that every run
    is there once and that no importer failed or said "locked" (issue 27 item 2 at the
    size of real bundles; tests/integration/test_import_concurrency.py is the test)."""
    shared, own = files[0], files[1 : 1 + 2 * importers]
    assert len(own) == 2 * importers, f"--many must be at least {2 * importers + 1}"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            iowall("import", *own[2 * k : 2 * k + 2], shared, "--db", url),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(importers)
    ]
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - t0
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode != 0 or "locked" in err or "deadlock" in err:
            raise SystemExit(f"a concurrent importer failed ({p.returncode}): {err.strip()}")
    n = PER_BUNDLE * (2 * importers + 1)
    added = sum(int(out.split()[1]) for out, _ in outs)  # "imported N runs, …"
    store = Store(url)
    with store.engine.connect() as conn:
        stored, distinct = conn.execute(text("SELECT count(*), count(DISTINCT uuid) FROM runs")).one()
    store.engine.dispose()
    if not added == stored == distinct == n:
        raise SystemExit(
            f"runs lost or doubled: {n} expected, {added} added, {stored} stored, {distinct} uuids"
        )
    what = f"{importers} imports at once (2 own bundles and a shared one each), every run once"
    return [line(backend, "new", what, n, wall)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--template-db", type=Path, help="template runs from a store_scale template store")
    ap.add_argument("--templates", metavar="BUNDLE", help="template runs from a bundle")
    ap.add_argument("--bundles", type=int, default=4, help="bundles of 500 runs to import")
    ap.add_argument("--many", type=int, default=20, help="packed bundles of 500 runs in one call")
    ap.add_argument("--old", type=Path, help="the src of an older tree, measured beside this one")
    ap.add_argument("--old-packed", action="store_true", help="the older tree reads packed bundles too")
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    ap.add_argument("--copy-runs", type=int, default=10_000, help="runs of the store db copy copies")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="import-rate-", dir=a.dir))
    cluster = None
    try:
        if a.templates:
            templates = read_bundle(a.templates)
        else:
            db = a.template_db or store_scale.make_templates(work, dict(os.environ, PYTHONPATH=str(SRC)))
            templates = store_scale.template_runs(db)[0]
        files, packed, many = [], [], []
        for b in range(max(a.bundles, a.many)):
            lo = b * PER_BUNDLE
            runs = list(clones(templates, lo, lo + PER_BUNDLE, random.Random(b)))
            many.append(str(work / f"m{b}.json"))
            write_bundle(runs, many[-1], packed=True)
            if b < a.bundles:
                files.append(str(work / f"b{b}.json"))
                write_bundle(runs, files[-1])
                packed.append(many[-1])
        for form, fs in (("plain", files), ("packed", packed)):
            size = sum(os.path.getsize(f) for f in fs) / len(fs) / 1e6
            print(f"{len(fs)} {form} bundles of {PER_BUNDLE} runs, {size:.1f} MB each", flush=True)
        trees = {"new": SRC, **({"old": a.old} if a.old else {})}
        count = iter(range(10**6))
        report = ["| store | tree | what | runs | wall | rate |", "|---|---|---|---|---|---|"]
        sqlite = lambda: f"sqlite:///{work / f's{next(count)}.db'}"  # noqa: E731
        report += measure("SQLite", sqlite, files, trees)
        report += measure("SQLite", sqlite, packed, trees, "packed", a.old_packed)
        report += measure_many("SQLite", sqlite, many, trees)
        fill_db = work / "fill.db"
        Store(str(fill_db))
        t0 = time.perf_counter()
        store_scale.fill(fill_db, templates, 0, len(files) * PER_BUNDLE)
        report.append(
            line(
                "SQLite",
                "new",
                "store_scale.fill (executemany)",
                len(files) * PER_BUNDLE,
                time.perf_counter() - t0,
            )
        )
        big = work / "big.db"
        Store(str(big))
        store_scale.fill(big, templates, 0, a.copy_runs)
        report += measure_copy(
            "SQLite", lambda: f"sqlite:///{work / f's{next(count)}.db'}", big, a.copy_runs, trees
        )
        report += measure_concurrent("SQLite", sqlite(), many, 2)
        if not a.no_pg and bindir() is not None:
            cluster = Cluster()
            cluster.start()

            def pg_url() -> str:
                name = f"ir{next(count)}"
                cluster.psql(f"CREATE DATABASE {name}")
                return cluster.url(name)

            report += measure("PostgreSQL", pg_url, files, trees)
            report += measure("PostgreSQL", pg_url, packed, trees, "packed", a.old_packed)
            report += measure_many("PostgreSQL", pg_url, many, trees)
            report += measure_copy("PostgreSQL", pg_url, big, a.copy_runs, trees)
            report += measure_concurrent("PostgreSQL", pg_url(), many, 8)
        print("\n".join(report))
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
