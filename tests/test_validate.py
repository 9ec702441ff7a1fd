"""``rxturn._validate``: the number checks every constructor shares."""

from __future__ import annotations

import math

import pytest

from rxturn._validate import is_int, is_number, positive, seconds_problem

INF, NAN = math.inf, math.nan


@pytest.mark.parametrize(
    ("value", "number", "integer"),
    [
        (1, True, True),
        (1.5, True, False),
        (True, False, False),
        ("1", False, False),
        (None, False, False),
        (NAN, True, False),
    ],
    ids=["int", "float", "bool", "str", "none", "nan"],
)
def test_is_number_and_is_int(value: object, number: bool, integer: bool) -> None:
    assert is_number(value) is number
    assert is_int(value) is integer


@pytest.mark.parametrize(
    ("value", "kwargs", "expected"),
    [
        (0.1, {}, True),
        (0, {}, False),
        (-1, {}, False),
        (0, {"allow_zero": True}, True),
        (-0.0, {"allow_zero": True}, True),
        (-1e-9, {"allow_zero": True}, False),
        (NAN, {}, False),
        (NAN, {"allow_zero": True}, False),
        (INF, {}, True),
        (INF, {"finite": True}, False),
        # an int past any float is positive, but not a finite float
        pytest.param(10**400, {}, True, id="huge-int"),
        pytest.param(10**400, {"finite": True}, False, id="huge-int-finite"),
        pytest.param(-(10**400), {"allow_zero": True}, False, id="huge-negative-int"),
        (3, {"integer": True}, True),
        (3.0, {"integer": True}, False),
        (True, {}, False),
        (True, {"integer": True}, False),
        ("5", {}, False),
        (None, {"allow_zero": True}, False),
    ],
)
def test_positive(value: object, kwargs: dict[str, bool], expected: bool) -> None:
    assert positive(value, **kwargs) is expected


@pytest.mark.parametrize(
    ("value", "allow_zero", "expected"),
    [
        (2.5, False, None),
        (0, True, None),
        (0, False, "must be > 0 seconds, got 0"),
        (-1, True, "must be >= 0 seconds, got -1"),
        (NAN, False, "must be a number of seconds, got nan"),
        (INF, False, "must be finite, got inf"),
        pytest.param(
            10**400, False, "must be finite, got an integer too large for a float", id="huge-int"
        ),
        pytest.param(
            -(10**400),
            True,
            "must be finite, got an integer too large for a float",
            id="huge-negative-int",
        ),
        pytest.param(  # too long even for repr()
            10**5000,
            False,
            "must be finite, got an integer too large for a float",
            id="int-of-5001-digits",
        ),
        ("3", False, "must be a number of seconds, got '3'"),
        (False, True, "must be a number of seconds, got False"),
    ],
)
def test_seconds_problem(value: object, allow_zero: bool, expected: str | None) -> None:
    assert seconds_problem(value, allow_zero=allow_zero) == expected
