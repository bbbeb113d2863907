"""Fuzz the bundle reader's JSON parsing (``bundle.parse_json``): pydantic-core's parser reads
a bundle first and the json module only what it refuses, so the two must never disagree on a
text both read: same values, same types, NaN and -0.0 included (1,000 texts in `make test`,
10,000 in `make fuzz`), and a text neither reads is one UserError."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_core import from_json

from iowall.bundle.files import parse_json
from iowall.vocab.errors import UserError

from .harness import FUZZ
from .mutate import EDGE_FLOATS, EDGE_INTS, EDGE_TEXT, text_edits

pytestmark = pytest.mark.fuzz

#: Texts where parsers are known to part: duplicate keys, numbers past a float's range or
#: below its smallest step, huge integers, lone surrogates, a BOM, NaN spelled as JSON
#: does not allow, exponents, control characters.
EDGES = [
    '{"a": 1, "a": 2}',
    "1e400",
    "-1e400",
    "1e-400",
    "5e-324",
    "-0",
    "-0.0",
    "0.1",
    "1E5",
    "123456789012345678901234567890",
    "-123456789012345678901234567890.5",
    '"\\ud800"',
    '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"',
    "\ufeff{}",
    "NaN",
    "-Infinity",
    "[NaN, Infinity, -Infinity]",
    '"\x01"',
    '{"a": [1, 2,]}',
    "[1] x",
    "",
    " ",
    '"\\u0000"',
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "2.2250738585072011e-308",
]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(EDGE_INTS),
    st.integers(),
    st.sampled_from(EDGE_FLOATS),
    st.floats(),
    st.sampled_from(EDGE_TEXT),
    st.text(),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal in value and type all the way down; floats by their repr (NaN, -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def _check(text: str) -> None:
    try:
        fast = from_json(text, allow_inf_nan=True)
    except ValueError:
        fast = None
        fast_ok = False
    else:
        fast_ok = True
    try:
        slow = json.loads(text)
    except (ValueError, RecursionError):
        assert not fast_ok, f"pydantic-core reads what json refuses: {text[:80]!r}"
        with pytest.raises(UserError):
            parse_json(text, "x.json")
        return
    if fast_ok:
        assert same(fast, slow), (text[:80], fast, slow)
    assert same(parse_json(text, "x.json"), slow)


@pytest.mark.parametrize("text", EDGES)
def test_the_parsers_agree_on_the_edges(text: str) -> None:
    _check(text)


@FUZZ
@given(values, st.sampled_from([None, 1]), st.booleans(), st.data())
def test_the_parsers_agree_on_any_text(
    value: Any, indent: int | None, ascii_only: bool, data: st.DataObject
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only, allow_nan=True)
    _check(text)
    try:
        edited = data.draw(text_edits(text)).decode("utf-8")
    except UnicodeDecodeError:  # the reader refuses it before parsing (bundle._read_text)
        return
    _check(edited)
