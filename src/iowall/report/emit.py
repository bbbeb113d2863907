"""One way out for every command: pick the renderer of a piece of data for a format, then write
the text to stdout or atomically to ``-o FILE`` (hyperfine's exporter pattern).

Renderers register themselves with ``@renders(Type, Format.X)`` in their report module; a new
format is one function in one module. Every JSON document carries ``schema_version``.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar

from ..machine.atomic import write_text
from ..vocab.errors import UserError
from . import RENDERER_MODULES

#: JSON documents without their own version are at this one.
SCHEMA_VERSION = 1


class Format(str, Enum):
    """Output formats; each command accepts the ones its data has renderers for."""

    text = "text"
    md = "md"
    json = "json"
    csv = "csv"
    html = "html"
    mail = "mail"  # a report in the shape of an LKP regression mail (bisect)


Renderer = Callable[[Any], str]
_RENDERERS: dict[tuple[type, Format], Renderer] = {}
F = TypeVar("F", bound=Renderer)


def renders(kind: type, *fmts: Format) -> Callable[[F], F]:
    """Register the decorated function as the renderer of ``kind`` in ``fmts``."""

    def deco(fn: F) -> F:
        for f in fmts:
            _RENDERERS[(kind, f)] = fn
        return fn

    return deco


def formats_for(kind: type) -> list[Format]:
    """The formats some renderer serves for ``kind`` (or a base class of it)."""
    return [f for f in Format if _find(kind, f) is not None]


def _find(kind: type, fmt: Format) -> Renderer | None:
    """The renderer of ``kind`` (or of its nearest base class) in ``fmt``. Unless ``kind``
    itself has one, every renderer module is imported first (once), so each command's
    formats are served while a command that imported its own renderer imports no other."""
    if (kind, fmt) not in _RENDERERS and not _LOADED:
        for name in RENDERER_MODULES:
            importlib.import_module(f"{__package__}.{name}")
        _LOADED.add(True)
    for k in kind.__mro__:
        fn = _RENDERERS.get((k, fmt))
        if fn is not None:
            return fn
    return None


#: Holds True once every renderer module is imported.
_LOADED: set[bool] = set()


def as_format(fmt: Format | Enum | str) -> Format:
    """A Format from any of the per-command format enums (or their value)."""
    value = fmt.value if isinstance(fmt, Enum) else fmt
    try:
        return Format(value)
    except ValueError:
        raise UserError(f"--format {value!r}: use one of {', '.join(f.value for f in Format)}") from None


def render(data: object, fmt: Format | Enum | str) -> str:
    """The text of ``data`` in ``fmt``; a UserError naming the formats it has."""
    f = as_format(fmt)
    fn = _find(type(data), f)
    if fn is None:
        have = ", ".join(x.value for x in formats_for(type(data))) or "none"
        raise UserError(f"--format {f.value} is not available here: use {have}")
    return fn(data)


def emit(
    data: object, fmt: Format | Enum | str = Format.text, output: str | None = None, *, what: str = "report"
) -> None:
    """Render ``data`` and write it to stdout, or atomically to ``output`` (then say
    ``wrote PATH`` on stderr, so that the file and the message never disagree)."""
    write(render(data, fmt), output, what=what)


def write(text: str, output: str | None, *, what: str = "report") -> None:
    """Text to stdout, or atomically to ``output`` with ``wrote PATH`` on stderr."""
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_text(output, text, what=what)
    wrote(output)


def wrote(path: str) -> None:
    """Say on stderr that ``path`` is written (stdout stays the data's)."""
    print(f"wrote {path}", file=sys.stderr)


def json_text(doc: Mapping[str, Any] | list[Any]) -> str:
    """JSON with ``schema_version`` first (unless the document has its own), compact on one
    line: it is read by programs (``jq .`` indents it), and without ``indent`` the json
    module's C encoder runs (3.5 times faster than the indenting Python one)."""
    if isinstance(doc, Mapping):
        doc = {
            "schema_version": doc.get("schema_version", SCHEMA_VERSION),
            **{k: v for k, v in doc.items() if k != "schema_version"},
        }
    else:
        doc = {"schema_version": SCHEMA_VERSION, "items": doc}
    return json.dumps(doc, separators=(",", ":"), default=str) + "\n"


@renders(dict, Format.json)
def _dict_json(doc: dict[str, Any]) -> str:
    return json_text(doc)
