"""Structural mutations shared by the fuzzers: odd values (wrong types, huge, negative, NaN,
inf, unicode, deep nesting), edits of a document tree (drop, replace, add, retype a key) and
edits of its text (truncate, duplicate a line, garbage, bytes that are not UTF-8)."""

from __future__ import annotations

import copy
import datetime as dt
import pickle
from typing import Any

from hypothesis import strategies as st

Doc = Any

#: Numbers at and beyond every edge a loader may have: 64-bit limits, floats' specials.
EDGE_INTS = [
    0,
    1,
    -1,
    2,
    255,
    256,
    4096,
    2**31 - 1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    2**64,
    10**30,
    -(10**30),
    10**400,
]
EDGE_FLOATS = [0.0, -0.0, 0.5, -1.5, 1e308, -1e308, 5e-324, float("nan"), float("inf"), float("-inf")]
EDGE_TEXT = [
    "",
    " ",
    "\t",
    "0",
    "-1",
    "1e999",
    "nan",
    "inf",
    "auto",
    "auto:0",
    "auto:-3",
    "auto:99999999999999999999",
    "4k",
    "256M",
    "1G",
    "25%",
    "-1M",
    "1.5G",
    "0x10",
    "1" * 400 + "k",
    "9" * 30 + "T",
    "ram",
    "dir:",
    "dir:/nonexistent/x",
    "tmpfs",
    "device:/dev/null",
    "xfs",
    "ext4",
    "btrfs",
    "write",
    "randrw",
    "uncached",
    "direct",
    "buffered",
    "io_uring",
    "ünïcode ✓",
    "名前",
    "\u202e",
    "a\nb",
    "a\x00b",
    "\\",
    '"',
    "'",
    "${HOME}",
    "../../etc/passwd",
    "x" * 300,
]


def deep(depth: int, leaf: Any = 1) -> Any:
    """``depth`` levels of alternating lists and tables around ``leaf``."""
    v = leaf
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


scalars = st.one_of(
    st.sampled_from(EDGE_INTS),
    st.sampled_from(EDGE_FLOATS),
    st.sampled_from(EDGE_TEXT),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.just(dt.datetime(2025, 1, 31, 12, 0)),
    st.just(dt.date(2025, 1, 31)),
)
odd_values = st.one_of(
    scalars,
    st.lists(scalars, max_size=4),
    st.dictionaries(st.text(max_size=8), scalars, max_size=3),
    st.builds(deep, st.sampled_from([3, 40, 200])),
    st.builds(list),
    st.builds(dict),
)


def containers(doc: Doc, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every table and list in ``doc`` (the root included)."""
    out = [path]
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for k, v in items:
        if isinstance(v, (dict, list)):
            out += containers(v, (*path, k))
    return out


#: Each seed pickled once (kept with the seed, so its id is not reused): unpickling copies a
#: real fio document several times faster than copy.deepcopy, 10,000 times a fuzzer.
_PICKLED: dict[int, tuple[Doc, bytes]] = {}


def fresh_copy(seed: Doc) -> Doc:
    """A deep copy of ``seed``."""
    kept = _PICKLED.get(id(seed))
    if kept is None or kept[0] is not seed:
        kept = _PICKLED[id(seed)] = (seed, pickle.dumps(seed, pickle.HIGHEST_PROTOCOL))
    return pickle.loads(kept[1])


def at(doc: Doc, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def mutated(
    draw: st.DrawFn, seed: Doc, keys: list[str], values: st.SearchStrategy[Any], max_edits: int = 4
) -> Doc:
    """``seed`` after up to ``max_edits`` edits: drop a key or item, replace a value by an odd
    one or by a plausible one (``values``), add a key (from ``keys``, or any text), duplicate
    a list item."""
    doc = fresh_copy(seed)
    for _ in range(draw(st.integers(0, max_edits))):
        path = draw(st.sampled_from(containers(doc)))
        box = at(doc, path)
        op = draw(st.sampled_from(["drop", "odd", "plausible", "add", "dup"]))
        slots = list(box) if isinstance(box, dict) else list(range(len(box)))
        if op == "add" or not slots:
            if isinstance(box, dict):
                name = draw(st.one_of(st.sampled_from(keys), st.text(max_size=12)))
                box[name] = draw(st.one_of(values, odd_values))
            else:
                box.append(draw(st.one_of(values, odd_values)))
            continue
        slot = draw(st.sampled_from(slots))
        if op == "drop":
            del box[slot]
        elif op == "odd":
            box[slot] = draw(odd_values)
        elif op == "plausible":
            box[slot] = draw(values)
        elif isinstance(box, list):
            box.append(copy.deepcopy(box[slot]))
        else:
            box[slot] = [copy.deepcopy(box[slot])] * draw(st.integers(0, 3))
    return doc


@st.composite
def text_edits(draw: st.DrawFn, text: str, max_edits: int = 2) -> bytes:
    """The text of a document after up to ``max_edits`` edits: truncated, a line duplicated
    or dropped, garbage inserted, bytes that are not UTF-8, a BOM."""
    data = text.encode()
    for _ in range(draw(st.integers(0, max_edits))):
        op = draw(st.sampled_from(["cut", "dupline", "dropline", "insert", "badbyte", "bom"]))
        pos = draw(st.integers(0, len(data)))
        lines = data.split(b"\n")
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "cut":
            data = data[:pos]
        elif op == "dupline":
            data = b"\n".join(lines[: i + 1] + lines[i:])
        elif op == "dropline":
            data = b"\n".join(lines[:i] + lines[i + 1 :])
        elif op == "insert":
            junk = draw(
                st.one_of(
                    st.sampled_from(
                        [
                            "[",
                            "]",
                            "{",
                            "}",
                            "=",
                            ",",
                            '"',
                            "'",
                            "\\",
                            "#",
                            "\n",
                            "[[x]]",
                            "a = 1",
                            "\x00",
                            "\r",
                            ":",
                            "NaN",
                            "-Infinity",
                            "1e999",
                        ]
                    ),
                    st.text(max_size=5),
                )
            )
            data = data[:pos] + junk.encode() + data[pos:]
        elif op == "badbyte":
            data = (
                data[:pos]
                + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]))
                + data[pos:]
            )
        else:
            data = b"\xef\xbb\xbf" + data
    return data
