"""What ``batch run`` says on stderr besides errors, built in-process (no command is started):
the end of the summary line (the error types of the rows that failed, and the first one's
message with the URL requested), and the notice of a ``--tpm`` no request fits in."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from rxturn.cli._batch import _errors_seen, _tpm_notice

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


@pytest.mark.parametrize(
    ("tpm", "max_tokens", "said"),
    [
        (8000, None, "--tpm 8000 is at most the default max_tokens (8192), "),
        (50, 50, "--tpm 50 is at most --max-tokens (50), "),
        (51, 50, None),
        (None, 50, None),
    ],
)
def test_a_tpm_at_most_the_reply_budget_is_said(
    capsys: pytest.CaptureFixture[str], tpm: int | None, max_tokens: int | None, said: str | None
) -> None:
    _tpm_notice(tpm, max_tokens, 8192)
    err = capsys.readouterr().err
    if said is None:
        assert err == ""
    else:
        assert err.startswith(f"rxturn batch: {said}") and err.count("\n") == 1
        assert "runs alone in its minute" in err
