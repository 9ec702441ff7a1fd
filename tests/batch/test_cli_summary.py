"""What ``batch run`` says on stderr besides errors, built in-process (no command is started):
the end of the summary line (the error types of the rows that failed, and the first one's
message with the URL requested), and the notice of a ``--tpm`` no request fits in."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from rxturn.batch._budget import Budget, LocalGate
from rxturn.cli._batch import PauseNotice, _errors_seen, _tpm_notice

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


def test_a_long_retry_after_pause_is_said_once_where_no_progress_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a pipe (no bar, no JSON lines) a 30 s pause the provider asked for would be 30 s of
    silence: it gets one line, not one per row that met the 429, and a later pause its own;
    a short one (as long as a reply) none."""
    clock = [100.0]
    gate = LocalGate(Budget(), clock=lambda: clock[0])
    gate.on_pause = PauseNotice(gate.now)
    gate.pause(30.0)
    clock[0] += 0.5
    gate.pause(30.0)  # another row's 429 of the same storm: the pause is a little longer
    clock[0] += 29.0
    gate.pause(5.0)  # within the pause said: nothing more
    clock[0] += 10.0
    gate.pause(3.0)  # after it, but short
    clock[0] += 5.0
    gate.pause(45.0)
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "rxturn batch: the provider's rate limit (Retry-After) holds every new request for 30 s; "
        "the run goes on by itself",
        "rxturn batch: the provider's rate limit (Retry-After) holds every new request for 45 s; "
        "the run goes on by itself",
    ]
