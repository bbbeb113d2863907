"""The dashboard's static files (plotly.js as the plotly package ships it, iowall.js, the
style sheet), read once, with an ETag, compressed once with gzip, and linked by a URL that
carries their hash so a browser may keep them for a year (4.8 MB of plotly.js over ``ssh -L``
once, not at every page)."""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property

import plotly
from starlette.requests import Request
from starlette.responses import Response

HERE = os.path.dirname(__file__)
#: name -> (file, media type)
FILES = {
    "plotly.min.js": (
        os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js"),
        "text/javascript; charset=utf-8",
    ),
    "iowall.js": (os.path.join(HERE, "static", "iowall.js"), "text/javascript; charset=utf-8"),
    "style.css": (os.path.join(HERE, "static", "style.css"), "text/css; charset=utf-8"),
}
#: A URL with the file's hash never changes content, so it may be cached for good.
FOREVER = "public, max-age=31536000, immutable"


@dataclass
class Asset:
    """One static file: its bytes, media type and ETag; the gzip form made on first use."""

    body: bytes
    media_type: str
    etag: str = field(init=False)

    def __post_init__(self) -> None:
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:20] + '"'

    @cached_property
    def gz(self) -> bytes:
        return gzip.compress(self.body, compresslevel=6, mtime=0)

    @property
    def version(self) -> str:
        return self.etag.strip('"')[:12]


def load_assets() -> dict[str, Asset]:
    """Every static file, read now (a missing plotly.js is an error at start, not a 500)."""
    out = {}
    for name, (path, kind) in FILES.items():
        with open(path, "rb") as f:
            out[name] = Asset(f.read(), kind)
    return out


def url_of(assets: dict[str, Asset], name: str) -> str:
    """The URL a page links ``name`` by: with its version, so that it can be cached forever."""
    return f"/static/{name}?v={assets[name].version}"


def respond(asset: Asset, request: Request) -> Response:
    """The file, or 304 when the browser holds this version; gzip when the browser takes it."""
    versioned = request.query_params.get("v") == asset.version
    headers = {
        "ETag": asset.etag,
        "Vary": "Accept-Encoding",
        "Cache-Control": FOREVER if versioned else "no-cache",
    }
    if asset.etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(
            asset.gz, media_type=asset.media_type, headers={**headers, "Content-Encoding": "gzip"}
        )
    return Response(asset.body, media_type=asset.media_type, headers=headers)
