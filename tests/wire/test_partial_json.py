"""``parse_partial`` against its oracle, jiter ``from_json(..., partial_mode=True)``.

jiter is what the official anthropic SDK uses to parse a tool call's unfinished input;
docs/behaviour.md §6 asks rxturn to match it exactly. Every expectation here is computed by jiter in
the test itself.
"""

from __future__ import annotations

import json
import math
from typing import Any

import jiter
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rxturn.wire._partial_json import parse_partial


def _jiter(text: str) -> tuple[str, Any]:
    try:
        return "ok", jiter.from_json(text.encode("utf-8", "surrogatepass"), partial_mode=True)
    except ValueError:
        return "raise", None


def _ours(text: str) -> tuple[str, Any]:
    try:
        return "ok", parse_partial(text)
    except ValueError:
        return "raise", None


def _same(a: Any, b: Any) -> bool:
    """Structural equality that also tells 0.0 from -0.0, NaN from NaN, 1 from 1.0 and key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _assert_agrees(text: str) -> None:
    expected, ours = _jiter(text), _ours(text)
    assert expected[0] == ours[0], (text, expected, ours)
    assert _same(expected[1], ours[1]), (text, expected, ours)


# Hand-picked edge cases found by experiment: literals, numbers, escapes, surrogates, recursion,
# trailing data, soft vs hard failures inside containers.
EDGE_CASES = [
    "",
    " ",
    "{",
    '{"',
    '{"a',
    '{"a"',
    '{"a":',
    '{"a": ',
    '{"a":1',
    '{"a":1,',
    '{"a":1, "b',
    '{"a":"x',
    '{"a":"x"',
    "[",
    "[1",
    "[1,",
    "[1, 2",
    '"abc',
    '"ab\\',
    '"ab\\u00',
    "t",
    "tru",
    "true",
    "nul",
    "fals",
    "-",
    "-1",
    "1.",
    "1.5",
    "1e",
    "1e+",
    "1E5",
    "0.",
    "-0",
    "[-",
    "[1.",
    "[1e",
    '{"a":-',
    '{"a":tr',
    "[tr",
    "[n",
    '{"a":[1,{"b":"c',
    "[[[",
    '{"a":{"b":{',
    "12 ",
    "[1,]",
    '{"a":1,}',
    " [ 1 , ",
    '{"a"  :',
    "x",
    "[x",
    '{"a":x',
    '"\\ud83d',
    "00",
    "01",
    "[01",
    "1 2",
    "[1]x",
    "[] x",
    "-a",
    "[-a",
    "{1",
    '{"a":1 "b"',
    "NaN",
    "Infinity",
    "[NaN",
    "[Inf",
    "-Inf",
    "[-Infinity",
    "nan",
    "1.x",
    "[1.x",
    "[1ex",
    "[1e+x",
    "[1.5e",
    "[-I",
    "[Ix",
    "[NaNx",
    "[-N",
    '"\\u00é"',
    '["\\u0',
    '["\\ud83d\\',
    '["\\ud83d\\u',
    '["\\ud83dx',
    '["\\ud83d"]',
    '["\\udc00"]',
    '["\\x"]',
    '["a\x01"]',
    '["a\x7f"]',
    "[1}",
    '{"a":[1}, "b":2}',
    '[{"a":1], 5]',
    '[{"a":1,2]',
    '{"a":1,]',
    '{"a" x',
    "[truex",
    "[nulll]",
    '{"b":1,"a":2,"b":3}',
    "1" * 30,
    "[" + "9" * 4300,
    "[" + "9" * 4301,
    "[-0.0",
    "[0e5]",
    "[1E-2]",
    "[,",
    "[1,,",
    "{,",
    '{"a",',
    '{"a":,',
    "\ufeff[1]",
    "[1]\ufeff",
    "[\u00a01]",
    "[1,\t\r\n2",
    "[" * 201,
    "[" * 202,
    "[" * 201 + "1",
    '{"a":' * 201,
    '{"a":' * 202,
    '["\\ud83d\\ude0',
    '["\\ud83d\\u0041"]',
    '["é\\u00e',
    "[1.0e400]",
    "[-1e-400]",
    '{"k": "v\\n\\t\\"\\/\\b\\f\\r"}',
]


@pytest.mark.parametrize("text", EDGE_CASES, ids=repr)
def test_edge_cases_agree_with_jiter(text: str) -> None:
    _assert_agrees(text)


def test_documented_examples() -> None:
    assert parse_partial('{"city": "Par') == jiter.from_json(b'{"city": "Par', partial_mode=True)
    assert parse_partial('{"n": 1, "tags": ["a", "b') == {"n": 1, "tags": ["a"]}


def test_error_says_where() -> None:
    with pytest.raises(ValueError, match=r"invalid escape at offset \d+"):
        parse_partial('{"a": "\\q"}')
    with pytest.raises(ValueError, match="EOF while parsing a string"):
        parse_partial('"unfinished')


# -- property: every prefix of every valid document ------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)


def _extend_documents(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function: hypothesis cannot read a multi-line lambda's source.
    return st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=6), children, max_size=4
    )


_documents = st.recursive(
    _scalars,
    _extend_documents,
    max_leaves=12,
)


@st.composite
def _encoded(draw: st.DrawFn) -> str:
    value = draw(_documents)
    ensure_ascii = draw(st.booleans())
    layout = draw(st.sampled_from(["compact", "spaced", "indented"]))
    if layout == "compact":
        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
    if layout == "spaced":
        return json.dumps(value, ensure_ascii=ensure_ascii)
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=draw(st.integers(0, 2)))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_encoded())
@example('{"filename": "taxes.txt", "lines_of_text": ["# GUIDE", "", "## INTRO"]}')
@example('{"a": [1.5e-7, -0.0, 12345678901234567890123, "\\ud83d\\ude00\\u00e9"]}')
def test_every_prefix_of_a_valid_document_agrees(document: str) -> None:
    for cut in range(len(document) + 1):
        _assert_agrees(document[:cut])


# -- property: arbitrary text over the JSON alphabet (malformed input must fail alike) --------

_ALPHABET = [*list('{}[]:,"\\ -+.0123456789eEtrufalsnNIiy\t\nxé'), "\\u", "\\ud83d", "\\ude00"]


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), max_size=24).map("".join))
def test_arbitrary_text_agrees(text: str) -> None:
    _assert_agrees(text)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_encoded(), st.integers(0, 10_000), st.sampled_from(_ALPHABET))
def test_corrupted_documents_agree(document: str, where: int, noise: str) -> None:
    cut = where % (len(document) + 1)
    _assert_agrees(document[:cut] + noise + document[cut:])
