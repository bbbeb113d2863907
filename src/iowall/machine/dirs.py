"""Where iowall keeps things: XDG data (store, loop images), state (journal), cache (the
fleet's wheelhouses) and run dirs."""

from __future__ import annotations

import os
import re
from pathlib import Path


def data_dir() -> Path:
    """``$XDG_DATA_HOME/iowall`` (default ``~/.local/share/iowall``), created on demand."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    p = Path(base) / "iowall"
    p.mkdir(parents=True, exist_ok=True)
    return p


def state_dir() -> Path:
    """``$XDG_STATE_HOME/iowall`` (default ``~/.local/state/iowall``): the undo journal."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    p = Path(base) / "iowall"
    p.mkdir(parents=True, exist_ok=True)
    return p


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/iowall`` (default ``~/.cache/iowall``): what can be built again."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    p = Path(base) / "iowall"
    p.mkdir(parents=True, exist_ok=True)
    return p


def default_db_url() -> str:
    """``IOWALL_DB`` if set, else SQLite in the data directory."""
    return db_url(os.environ.get("IOWALL_DB") or str(data_dir() / "iowall.db"))


def db_url(text: str) -> str:
    """A store as a user names it: a URL (``sqlite:///F``, ``postgresql://…``) as it is, a
    plain file path as the SQLite URL of that file (relative to the current directory)."""
    if "://" in text:
        return text
    return f"sqlite:///{os.path.abspath(os.path.expanduser(text))}"


def redact_url(url: str) -> str:
    """A store URL with any password replaced by ``***`` (``postgresql://u:***@h/db``, also
    ``?password=`` and ``sslpassword=``): what every message, page and log shows of a store."""
    url = re.sub(r"(://[^/:@?]*):[^@]*@", r"\1:***@", url)
    return re.sub(r"([?&](?:ssl)?password=)[^&]*", r"\1***", url, flags=re.IGNORECASE)
