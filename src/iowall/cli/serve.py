"""`iowall serve`: the dashboard of a store (read-only), on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Annotated

import typer
import uvicorn

from ..store import Store
from ..vocab.errors import UserError
from ..web.app import create_app
from ..web.guard import HostNames
from .options import DbOpt


def loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as e:
        raise UserError(f"--host {host!r}: {e.strerror}") from None
    return all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); a UserError if it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(128)
    return sock


def serve(
    host: Annotated[
        str,
        typer.Option(
            metavar="ADDR", help="the address to listen on; beyond this machine only with --allow-remote"
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, metavar="PORT", help="the port (0: any free one)")
    ] = 8040,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="listen on a non-loopback --host: every stored run, its "
            "environment and raw data become readable from the network",
        ),
    ] = False,
    server_name: Annotated[
        list[str] | None,
        typer.Option(
            "--server-name",
            metavar="NAME",
            help="a host name the dashboard is reached by besides "
            "its address (a reverse proxy's), repeatable: other Host headers are refused (DNS "
            "rebinding)",
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Serve the dashboard of the store: runs, a run with its Why and flame graph, compare,
    history with change points, stored reports. Read-only; prints its URL."""
    if not loopback(host) and not allow_remote:
        raise UserError(
            f"--host {host} listens beyond this machine: every stored run would be "
            "readable from the network; add --allow-remote if that is meant"
        )
    store = Store.existing(db).pooled()  # a server reads many times: keep connections
    sock = bound_socket(host, port)
    addr, bound = sock.getsockname()[:2]
    shown = f"[{addr}]" if ":" in addr else addr
    print(
        f"iowall: serving {store.shown} at http://{shown}:{bound}/ (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    app = create_app(store, HostNames.of(addr, server_name or ()))
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
