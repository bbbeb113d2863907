"""The dashboard over HTTP, as a client other than a browser sees it: the store's password
never shown, the Host header checked (DNS rebinding), ids validated (404/400, never 500),
HEAD, ``nosniff`` and a CSP on every response, static files cached and compressed, and the
text that reaches plotly.js plain. A real server (uvicorn, in a thread) on a synthetic store
(tests/dashboard_store.py): no measuring, a few seconds in all."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from iowall.store import Store
from iowall.web.assets import FILES
from iowall.web.guard import HostNames
from tests.dashboard_store import LINK, Made, build, served

pytestmark = pytest.mark.beside  # measures nothing: phase 1 of make test

PASSWORD = "s3cretPW"


def get(
    port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request (any Host header, any method): status, headers (lower-case), body."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    return build(tmp_path_factory.mktemp("dash") / "store.db")


@pytest.fixture(scope="module")
def port(made: Made) -> Iterator[int]:
    with served(Store(made.url)) as p:
        yield p


def test_password_masked_in_pages_errors_and_cli(pg_url: str, made: Made) -> None:
    """A PostgreSQL URL with a password (the suite's server trusts, so any password opens
    it): the nav bar, a 404, an empty selection's message, the start-up line and a CLI error
    show ``***`` in its place."""
    url = pg_url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")
    assert PASSWORD in url
    st = Store(url)
    st.add_runs([Store(made.url).get_run(made.trend[0])])
    try:
        with served(st) as p:
            for path, status in (
                ("/runs", 200),
                ("/run/0", 404),
                ("/run/99", 404),
                ("/compare?base=nolabel&new=trend", 400),
                ("/runs?label=%00", 400),
            ):  # PostgreSQL refuses a NUL
                code, _, body = get(p, path)
                assert code == status, path
                assert PASSWORD.encode() not in body, path
            assert b"postgres:***@" in get(p, "/runs")[2]
        env = dict(os.environ, IOWALL_DB=url)
        exe = os.path.join(os.path.dirname(sys.executable), "iowall")
        show = subprocess.run([exe, "show", "999"], env=env, capture_output=True, text=True, timeout=60)
        assert show.returncode == 2 and "postgres:***@" in show.stderr
        assert PASSWORD not in show.stderr + show.stdout
        srv = subprocess.Popen(
            [exe, "serve", "--port", "0"],
            env=env,
            text=True,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        try:
            assert srv.stderr is not None
            line = srv.stderr.readline()
        finally:
            srv.terminate()
            srv.wait(timeout=20)
        assert "serving postgresql://postgres:***@" in line and PASSWORD not in line
    finally:
        st.engine.dispose()


def test_foreign_host_refused(made: Made) -> None:
    """DNS rebinding: a page of attacker.example that resolves to 127.0.0.1 sends its own name
    as Host. Refused (400); the loopback names, and --server-name's, are answered."""
    with served(Store(made.url), HostNames.of("127.0.0.1", ["dash.example.org"])) as p:
        for host, status in (
            (f"attacker.example:{p}", 400),
            ("attacker.example", 400),
            (f"127.0.0.1:{p}", 200),
            (f"localhost:{p}", 200),
            ("localhost:9000", 200),
            (f"[::1]:{p}", 200),
            ("dash.example.org", 200),
            ("DASH.example.org.:443", 200),
            ("dash.example.org.attacker.example", 400),
        ):
            code, headers, body = get(p, "/runs", headers={"Host": host})
            assert code == status, host
            if code == 400:
                assert b"--server-name" in body and headers["x-content-type-options"] == "nosniff"


def test_host_names_on_a_wildcard_address() -> None:
    any_ = HostNames.of("0.0.0.0", ["box.example"])
    assert any_.allows("10.1.2.3:8040") and any_.allows("box.example:8040")
    assert not any_.allows("attacker.example:8040")
    one = HostNames.of("10.1.2.3")
    assert one.allows("10.1.2.3") and not one.allows("127.0.0.1") and not one.allows("localhost")


BAD_IDS = [
    ("/run/99999999999999999999", 404),
    ("/runs?before=99999999999999999999", 400),
    ("/runs?before=%EF%BC%99", 400),
    ("/flame/99999999999999999999.svg", 404),
    ("/flame/diff?base=99999999999999999999&new=1", 404),
    ("/flame/diff", 404),
    ("/run/99999999999999999999/raw/fio.json", 404),
    ("/run/%C2%B2", 404),
    ("/run/%EF%BC%99", 404),
    ("/run/%EF%BC%99/raw/fio.json", 404),
    ("/compare?base=ids%3D99999999999999999999&new=trend", 400),
    ("/history?sel=ids%3D1-99999999999999999999", 400),
    ("/runs?label=%00", 400),
    ("/history?sel=a%00b", 400),
    ("/run/%00", 400),
]


@pytest.mark.parametrize(("path", "status"), BAD_IDS)
def test_bad_ids_are_404_or_400(port: int, path: str, status: int) -> None:
    code, _, body = get(port, path)
    assert code == status, body[:300]


def test_full_width_nine_is_not_run_nine(port: int) -> None:
    assert get(port, "/run/9")[0] == 200
    code, _, body = get(port, "/run/%EF%BC%99")
    assert code == 404 and b"Run 9:" not in body


def _pages(made: Made) -> list[str]:
    rid = made.limits[("write", "buffered", 2)][0]
    return [
        "/runs",
        f"/run/{rid}",
        f"/run/{rid}/raw/fio.json",
        f"/flame/{rid}.svg",
        f"/flame/diff?base={rid}&new={made.trend[0]}",
        "/history?sel=label%3Dtrend",
        f"/compare?base=ids%3D{made.trend[0]}-{made.trend[7]}&new=ids%3D{made.trend[8]}-{made.trend[15]}",
        f"/report/{made.batch}",
        "/run/0",
        "/nowhere",
        "/static/style.css",
    ]


def test_head_answers_like_get(port: int, made: Made) -> None:
    for path in _pages(made):
        g_code, g_headers, g_body = get(port, path)
        h_code, h_headers, h_body = get(port, path, "HEAD")
        assert h_code == g_code and h_body == b"", path
        assert h_headers["content-type"] == g_headers["content-type"], path
        assert int(h_headers["content-length"]) == len(g_body), path


def test_nosniff_and_csp_on_every_response(port: int, made: Made) -> None:
    for path in _pages(made):
        _, headers, _ = get(port, path)
        assert headers["x-content-type-options"] == "nosniff", path
        assert "default-src" in headers["content-security-policy"], path
    _, headers, svg = get(port, _pages(made)[3])
    csp = headers["content-security-policy"]
    script_src = re.search(r"script-src ([^;]*)", csp)
    assert script_src and "'unsafe-inline'" not in script_src.group(1) and "sha256-" in csp
    assert b"<script" in svg and headers["content-type"].startswith("image/svg+xml")


def test_static_files_cached_and_compressed(port: int) -> None:
    _, _, page = get(port, "/run/9")
    src = re.search(rb'src="(/static/plotly\.min\.js\?v=[0-9a-f]+)"', page)
    assert src, "pages link plotly.js by a versioned URL"
    code, headers, body = get(port, src.group(1).decode(), headers={"Accept-Encoding": "gzip"})
    assert code == 200 and headers["content-encoding"] == "gzip"
    assert "immutable" in headers["cache-control"] and headers["etag"]
    with open(FILES["plotly.min.js"][0], "rb") as f:
        assert gzip.decompress(body) == f.read()
    assert len(body) < len(gzip.decompress(body)) / 3
    code, _, body = get(port, "/static/plotly.min.js", headers={"If-None-Match": headers["etag"]})
    assert code == 304 and body == b""
    code, headers, _ = get(port, "/static/style.css")
    assert code == 200 and headers["cache-control"] == "no-cache" and "content-encoding" not in headers


def _figures(page: bytes) -> list[Any]:
    return [
        json.loads(m)
        for m in re.findall(rb'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.S)
    ]


def _strings(x: Any) -> Iterator[str]:
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def test_text_reaches_plotly_as_plain_text(port: int, made: Made) -> None:
    """A point value and a series name that are a link: on the run page (a series name) and
    on history (a series title holding the point), no string of any figure holds markup."""
    pages = [f"/run/{made.hostile['link']}", "/history?sel=label%3Dhostile"]
    seen = 0
    for path in pages:
        code, _, body = get(port, path)
        assert code == 200, path
        figs = _figures(body)
        assert figs, path
        texts = [s for f in figs for s in _strings(f)]
        assert not [s for s in texts if "<" in s or ">" in s], path
        seen += sum("&lt;a href=" in s for s in texts)
    assert seen >= 2 and LINK  # the link is there, as text
