"""The end of ``batch run``'s summary line: the error types of the rows that failed, and the
first one's message with the URL requested (in-process: the line is built from the run's
counts, no command is started)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from rxturn.cli._batch import _errors_seen

URL = "http://127.0.0.1:8080/v1/messages"


def _said(errors: dict[str, int], first: str, url: str = URL) -> str:
    return _errors_seen(SimpleNamespace(errors=Counter(errors), first_error=first), url)


def test_the_kinds_left_out_are_counted_in_words() -> None:
    four = {"A": 5, "B": 4, "C": 3, "D": 2}
    assert _said(four, "A: boom", "") == "; errors: 5 A, 4 B, 3 C and 1 more kind (first: A: boom)"
    assert " and 2 more kinds (first: " in _said({**four, "E": 1}, "A: boom", "")


def test_the_first_error_names_the_url_once() -> None:
    assert _said({"NotFoundError": 2}, "NotFoundError: HTTP 404") == (
        f"; errors: 2 NotFoundError (first: NotFoundError: HTTP 404; requested {URL})"
    )
    named = f"RescueFailed: cannot connect to {URL}: refused"
    assert _said({"RescueFailed": 1}, named) == f"; errors: 1 RescueFailed (first: {named})"
    assert _said({}, "") == ""
