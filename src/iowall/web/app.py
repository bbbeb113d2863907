"""The dashboard's routes (read-only: GET only): runs, a run, compare, history, a stored report,
flame graphs and raw artifacts, each at a stable URL that can go into a mail or a CI log."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.middleware.gzip import GZipMiddleware

from ..actions.flame import flame_svg
from ..actions.history import histories
from ..analysis.regress.history import BY
from ..recipes.stored import stored_report
from ..report.emit import render
from ..report.table import cell_text
from ..store import Store
from ..vocab.errors import IowallError, NotFound, UserError
from . import downloads, pages
from .assets import load_assets, respond, url_of
from .figures import XS
from .guard import Guard, HostNames, svg_csp
from .queries import FILTERS, compare_sets, find_run, run_page, run_ref

HERE = os.path.dirname(__file__)
#: Pages without plots do not load plotly.js (4.6 MB).
NO_PLOTS = ("runs.html", "error.html")
#: Raw artifacts are served as what they are, never as a page a browser would run.
RAW_TYPES = {".json": "application/json", ".svg": "text/plain"}


def templates() -> Environment:
    """Jinja2 with autoescape on every template: a label is text, never markup."""
    env = Environment(
        loader=FileSystemLoader(os.path.join(HERE, "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["q"] = lambda d: urlencode({k: v for k, v in d.items() if v not in (None, "")})
    env.filters["short"] = pages.short
    env.filters["cell"] = cell_text  # a report table's number in its unit, as the CLI shows it
    return env


def create_app(store: Store, hosts: HostNames | None = None) -> FastAPI:
    """The dashboard of one store, answering the Host names ``hosts`` allows (default: a
    server on 127.0.0.1)."""
    app = FastAPI(title="iowall", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(GZipMiddleware, minimum_size=1000)
    app.add_middleware(Guard, hosts=hosts or HostNames.of("127.0.0.1"))
    env = templates()
    assets = load_assets()
    env.globals["asset"] = lambda name: url_of(assets, name)

    def page(name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        text = env.get_template(name).render(store=store.shown, plots=name not in NO_PLOTS, **ctx)
        return HTMLResponse(text, status)

    def guarded(fn: Callable[[], HTMLResponse]) -> HTMLResponse:
        try:
            return fn()
        except NotFound as e:
            return page("error.html", 404, message=str(e))
        except UserError as e:
            return page("error.html", 400, message=str(e))
        except IowallError as e:
            return page("error.html", 500, message=str(e))

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/runs")

    @app.get("/runs", response_class=HTMLResponse)
    def runs(request: Request) -> HTMLResponse:
        params = dict(request.query_params)
        filters = {k: params.get(k, "") for k in (*FILTERS, "since", "until", "ids")}
        return guarded(
            lambda: page(
                "runs.html",
                filters=filters,
                labels=store.labels(),
                rows=pages.run_rows(run_page(store, params)),
                params=params,
            )
        )

    @app.get("/runs.{fmt}")
    def runs_download(fmt: str, request: Request) -> Response:
        return _download(fmt, "runs", lambda: downloads.runs(store, dict(request.query_params)))

    @app.get("/compare.{fmt}")
    def compare_download(fmt: str, base: str = "", new: str = "", metric: str = "") -> Response:
        return _download(fmt, "compare", lambda: compare_sets(store, base, new, metric or None))

    @app.get("/history.{fmt}")
    def history_download(
        fmt: str, sel: str = "", metric: str = "", by: str = "time", series: str = ""
    ) -> Response:
        return _download(fmt, "history", lambda: downloads.history(store, sel, metric, by, series, fmt))

    @app.get("/run/{ref}", response_class=HTMLResponse)
    def run(ref: str) -> HTMLResponse:
        return guarded(lambda: page("run.html", **pages.run_context(store, find_run(store, ref))))

    @app.get("/run/{ref}/raw/{name}")
    def raw(ref: str, name: str) -> Response:
        try:
            r = find_run(store, ref)
        except NotFound as e:
            return Response(str(e) + "\n", 404, media_type="text/plain")
        art = next((a for a in r.artifacts if a.name == name), None)
        if art is None:
            return Response(f"run {r.id} has no artifact {name!r}\n", 404, media_type="text/plain")
        kind = RAW_TYPES.get(os.path.splitext(name)[1], "text/plain")
        return Response(art.body, media_type=kind)

    @app.get("/compare", response_class=HTMLResponse)
    def compare(base: str = "", new: str = "", metric: str = "") -> HTMLResponse:
        def build() -> HTMLResponse:
            res = compare_sets(store, base, new, metric or None) if base and new else None
            return page(
                "compare.html",
                base=base,
                new=new,
                metric=metric,
                labels=store.labels(),
                **pages.compare_context(res),
            )

        return guarded(build)

    @app.get("/history", response_class=HTMLResponse)
    def history(
        sel: str = "", metric: str = "", by: str = "time", x: str = "run", series: str = ""
    ) -> HTMLResponse:
        def build() -> HTMLResponse:
            if x not in XS:
                raise UserError(f"x {x!r}: use one of {', '.join(XS)}")
            hs = histories(store, sel, metric, by, series) if sel else []
            q = {"sel": sel, "metric": metric, "by": by, "series": series}
            return page(
                "history.html",
                sel=sel,
                metric=metric,
                by=by,
                bys=BY,
                x=x,
                xs=XS,
                series=series,
                query=q,
                labels=store.labels(),
                histories=[pages.history_context(h, x, i + 1) for i, h in enumerate(hs)],
            )

        return guarded(build)

    @app.get("/report/{batch}", response_class=HTMLResponse)
    def report(batch: str) -> HTMLResponse:
        def build() -> HTMLResponse:
            rep = stored_report(store, batch)
            return page("report.html", rep=rep, **pages.report_context(rep))

        return guarded(build)

    @app.get("/flame/diff")
    def flame_diff(base: str = "", new: str = "") -> Response:
        return _svg(lambda: flame_svg(store, [str(run_ref(base)), str(run_ref(new))]))

    @app.get("/flame/{ref}.svg")
    def flame(ref: str) -> Response:
        return _svg(lambda: flame_svg(store, [str(run_ref(ref))]))

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str, request: Request) -> Response:
        if name not in assets:
            return Response("no such file\n", 404, media_type="text/plain")
        return respond(assets[name], request)

    return app


def _download(fmt: str, what: str, make: Callable[[], object]) -> Response:
    """What a page shows in the CLI's own CSV or JSON (``--format csv|json``), as a file;
    ``make`` returns the data to render, or the text itself."""
    if fmt not in downloads.TYPES:
        return Response(f"no {what}.{fmt}: csv or json\n", 404, media_type="text/plain")
    try:
        data = make()
        text = data if isinstance(data, str) else render(data, fmt)
    except NotFound as e:
        return Response(str(e) + "\n", 404, media_type="text/plain")
    except UserError as e:
        return Response(str(e) + "\n", 400, media_type="text/plain")
    return Response(
        text,
        media_type=downloads.TYPES[fmt],
        headers={"Content-Disposition": f'attachment; filename="iowall-{what}.{fmt}"'},
    )


def _svg(make: Callable[[], str]) -> Response:
    """A flame graph (its own scripts allowed by their hashes, nothing else), or the reason
    there is none as plain text (404)."""
    try:
        svg = make()
    except (UserError, IowallError) as e:
        return Response(str(e) + "\n", 404, media_type="text/plain")
    return Response(svg, media_type="image/svg+xml", headers={"Content-Security-Policy": svg_csp(svg)})
