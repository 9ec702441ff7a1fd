"""``parse_retry_after``: the one reader of a provider's wait hint, against absurd input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxturn.clients import _http
from rxturn.resilience import backoff
from rxturn.resilience.backoff import parse_retry_after

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


def test_the_clients_use_the_one_parser() -> None:
    assert _http.parse_retry_after is backoff.parse_retry_after


@pytest.mark.parametrize(
    "value",
    [
        "-0.5",
        "-99999999999",
        "NaN",
        "-inf",
        "Infinity",
        "1" * 400,  # a float would be inf
        "0x10",
        "٣",  # an Arabic-Indic digit: float() takes it, HTTP does not
        "5;q=1",
        "1.",
        ".5",
        "Wed, 32 Oct 2015 07:28:10 GMT",  # no such day
        "Wed, 21 Oct 99999 07:28:10 GMT",  # no such year
        "\x00",
    ],
    ids=[
        "negative-fraction",
        "huge-negative",
        "nan-word",
        "minus-inf",
        "infinity",
        "overflowing-digits",
        "hex",
        "non-ascii-digit",
        "parameters",
        "trailing-dot",
        "leading-dot",
        "impossible-day",
        "impossible-year",
        "nul",
    ],
)
def test_absurd_values_are_none(value: str) -> None:
    assert parse_retry_after({"Retry-After": value}, now=NOW) is None
    assert parse_retry_after({"retry-after-ms": value}, now=NOW) is None


def test_an_absurd_ms_value_falls_back_to_retry_after() -> None:
    headers = {"retry-after-ms": "-250", "Retry-After": "7"}
    assert parse_retry_after(headers, now=NOW) == 7.0


def test_huge_values_are_kept_for_the_ladder_to_cap() -> None:
    assert parse_retry_after({"retry-after-ms": "86400000000"}, now=NOW) == 86400000.0
    assert parse_retry_after({"Retry-After": "1" + "0" * 30}, now=NOW) == 1e30


def test_a_date_without_zone_is_utc() -> None:
    # "-0000" is RFC 5322's "no zone information"; email.utils returns a naive datetime for it
    assert parse_retry_after({"Retry-After": "Thu, 02 Jan 2025 03:04:35 -0000"}, now=NOW) == 30.0


def test_a_date_with_an_offset_is_converted() -> None:
    # 04:04:35 at +01:00 is 03:04:35 UTC: 30 s after NOW
    assert parse_retry_after({"Retry-After": "Thu, 02 Jan 2025 04:04:35 +0100"}, now=NOW) == 30.0


@given(st.text(max_size=40))
def test_any_text_is_none_or_a_finite_non_negative_number(value: str) -> None:
    for name in ("Retry-After", "retry-after-ms"):
        seconds = parse_retry_after({name: value}, now=NOW)
        assert seconds is None or (seconds >= 0 and seconds == seconds and seconds != float("inf"))
