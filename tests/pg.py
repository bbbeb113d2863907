"""A throw-away PostgreSQL cluster for the suite: Debian's server binaries, initdb into a
temporary directory, a Unix socket in that directory only, fsync off, one database per test.

As root the cluster runs as the ``postgres`` user (the server refuses to run as root), through
``runuser``; otherwise as the user running the tests. ``stop`` removes everything."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

#: The template every test database is copied from: migrated once, so a test's own Store only
#: finds its schema current (CREATE DATABASE … TEMPLATE is a file copy, a few milliseconds);
#: its text sorts by ICU's en-US rules.
TEMPLATE = "iowall_template"


def bindir() -> str | None:
    """The newest installed PostgreSQL server's binaries (``/usr/lib/postgresql/N/bin``)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    return os.path.dirname(found[-1]) if found else None


def reap_stale() -> None:
    """Stop and remove the clusters of test sessions that were killed (their pytest process
    is gone), so that a SIGKILLed run leaves nothing behind for long."""
    for d in Path(tempfile.gettempdir()).glob("iowall-pg-*"):
        try:
            pid = int((d / "owner.pid").read_text())
            os.kill(pid, 0)
            continue  # its session is still running
        except (OSError, ValueError):
            pass
        if (d / "data" / "postmaster.pid").exists():
            owner = pwd.getpwuid(d.stat().st_uid).pw_name
            prefix = ["runuser", "-u", owner, "--"] if os.geteuid() == 0 else []
            subprocess.run(
                [*prefix, f"{bindir()}/pg_ctl", "-D", str(d / "data"), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(d, ignore_errors=True)


class Cluster:
    """One initdb'd, started cluster; ``url(db)`` names a database on it."""

    def __init__(self) -> None:
        bins = bindir()
        if bins is None:
            raise RuntimeError(
                "PostgreSQL server not installed: apt-get install postgresql (scripts/setup-debs.sh does it)"
            )
        self.bin = bins
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.dir = Path(tempfile.mkdtemp(prefix="iowall-pg-"))
        self.data = self.dir / "data"
        if os.geteuid() == 0:
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.dir.chmod(0o755)
        (self.dir / "owner.pid").write_text(str(os.getpid()))
        self.started = False
        self._admin: psycopg.Connection[Any] | None = None

    def _as_owner(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 else []
        cp = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=120)
        if cp.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed ({cp.returncode}): {cp.stderr or cp.stdout}")
        return cp

    def start(self, settings: str = "") -> None:
        """initdb (trust, C locale, UTF-8) and start with the socket in the temp dir only;
        ``settings``: more ``-c name=value`` options (a benchmark's larger buffers)."""
        self._as_owner(
            f"{self.bin}/initdb",
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        opts = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.dir}' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=100 -c shared_buffers=32MB " + settings
        )
        self.opts = opts
        self._pg_ctl_start()
        self.started = True
        # ICU en-US, as most servers sort text (not by code point): ordering the store leaves
        # to the database shows up as a difference from SQLite
        self.psql(
            f"CREATE DATABASE {TEMPLATE} TEMPLATE template0 LOCALE_PROVIDER icu "
            "ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
        )

    def _pg_ctl_start(self) -> None:
        self._as_owner(
            f"{self.bin}/pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.dir / "server.log"),
            "-o",
            self.opts,
            "-w",
            "-t",
            "60",
            "start",
        )

    def bounce(self, down_s: float) -> None:
        """Stop the server (fast shutdown: every connection cut), leave it down ``down_s``
        seconds, start it again: a restart as a store's clients meet it."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        self._as_owner(f"{self.bin}/pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(down_s)
        self._pg_ctl_start()

    def psql(self, sql: str, db: str = "postgres") -> str:
        """Run one SQL command through psql on the socket; its output."""
        return self._as_owner(
            f"{self.bin}/psql",
            "-h",
            str(self.dir),
            "-U",
            self.user,
            "-d",
            db,
            "-v",
            "ON_ERROR_STOP=1",
            "-qAtc",
            sql,
        ).stdout

    def url(self, db: str) -> str:
        """The store URL of database ``db`` (the form a user passes to ``--db``)."""
        return f"postgresql://{self.user}@/{db}?host={self.dir}"

    def sql(self, command: str) -> None:
        """Run one command outside a transaction (CREATE/DROP DATABASE) on a kept connection:
        a tenth of psql's cost, which counts once per test."""
        if self._admin is None:
            self._admin = psycopg.connect(
                host=str(self.dir), user=self.user, dbname="postgres", autocommit=True
            )
        self._admin.execute(command)  # type: ignore[arg-type]

    def fresh_db(self) -> str:
        """A new empty-but-migrated database (a copy of TEMPLATE); its name."""
        name = "t_" + uuid.uuid4().hex[:12]
        self.sql(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return name

    def drop_db(self, name: str) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove the directory, whatever state it is in."""
        try:
            if self._admin is not None:
                self._admin.close()
            if self.started:
                self._as_owner(f"{self.bin}/pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
