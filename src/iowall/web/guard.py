"""What every response of the dashboard passes through: the Host header checked against the
names the server was bound to (a page elsewhere cannot read the store by DNS rebinding), HEAD
answered as GET without a body, and ``nosniff`` plus a CSP on every response."""

from __future__ import annotations

import base64
import hashlib
import html
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Scripts only from this server (plotly.js, iowall.js); plot data is inert JSON.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'self'; connect-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'self'"
)


def host_name(header: str) -> str:
    """The name in a Host header, without its port, brackets or trailing dot, lower case."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1 : h.find("]")] if "]" in h else h
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None


@dataclass(frozen=True)
class HostNames:
    """The Host headers a server bound to ``bound`` answers: its own address; on loopback,
    ``localhost`` and every loopback address (``ssh -L`` forwards keep the name); on a wildcard
    address, any address literal (a rebinding attack needs a name); and the ``names`` given
    (``--server-name``, a reverse proxy's). The port is not checked: a forward may change it."""

    bound: str
    names: tuple[str, ...] = ()

    @staticmethod
    def of(bound: str, names: Iterable[str] = ()) -> HostNames:
        return HostNames(bound, tuple(host_name(n) for n in names if n.strip()))

    def allows(self, header: str | None) -> bool:
        if header is None:  # HTTP/1.0 without Host: not a browser, so no rebinding
            return True
        name = host_name(header)
        if name in self.names or name == host_name(self.bound):
            return True
        bound, ip = _ip(self.bound), _ip(name)
        if bound is not None and bound.is_loopback:
            return name == "localhost" or (ip is not None and ip.is_loopback)
        return bound is not None and bound.is_unspecified and ip is not None


class Guard:
    """ASGI middleware: the Host check, HEAD, and the security headers (see the module)."""

    def __init__(self, app: ASGIApp, hosts: HostNames) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host")
        if not self.hosts.allows(host):
            await _refuse(
                send,
                f"Host {host!r} is not a name this server answers to: open it "
                "by the address it listens on, or start it with --server-name NAME "
                "behind a reverse proxy",
            )
            return
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            # no store keeps a NUL in a text (PostgreSQL refuses the query: it was a 500)
            await _refuse(send, "a NUL character in the URL: no run has one")
            return
        head = scope["method"] == "HEAD"
        if head:
            scope = dict(scope, method="GET")

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Content-Security-Policy", CSP)
                headers.setdefault("Referrer-Policy", "same-origin")
            elif head and message["type"] == "http.response.body":
                message = {
                    "type": "http.response.body",
                    "body": b"",
                    "more_body": message.get("more_body", False),
                }
            await send(message)

        await self.app(scope, receive, guarded)


async def _refuse(send: Send, why: str) -> None:
    """400 with the reason as plain text, before any route is looked at."""
    body = (why + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
                (b"content-security-policy", CSP.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_HANDLER = re.compile(r"\son[a-z]+=\"([^\"]*)\"")


def _text(inner: str) -> str:
    """A script element's text as an XML parser gives it (what a CSP hash is taken over): its
    CDATA sections verbatim, one after another, the text between them unescaped."""
    out, at = [], 0
    for m in _CDATA.finditer(inner):
        out += [html.unescape(inner[at : m.start()]), m.group(1)]
        at = m.end()
    return "".join([*out, html.unescape(inner[at:])])


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def svg_csp(svg: str) -> str:
    """A CSP that lets exactly the renderer's own scripts and event handlers of ``svg`` run
    (by hash; a script smuggled in through a frame name would not match) and loads nothing."""
    scripts = [_text(inner) for inner in _SCRIPT.findall(svg)]
    handlers = {html.unescape(h) for h in _HANDLER.findall(svg)}
    allowed = " ".join(sorted({_sha(x) for x in scripts} | {_sha(h) for h in handlers}))
    hashes = f"'unsafe-hashes' {allowed}" if handlers else allowed
    return (
        f"default-src 'none'; script-src {hashes or chr(39) + 'none' + chr(39)}; "
        "style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
    )
