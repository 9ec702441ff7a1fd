"""What ``batch run`` says on stderr besides errors, built in-process (no command is started):
the end of the summary line (the error types of the rows that failed, and the first one's
message with the URL requested), and the notice of a ``--tpm`` no request fits in."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

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


def test_a_request_that_could_not_be_made_names_no_url() -> None:
    """A row whose option its provider does not take (``thinking`` on OpenAI) fails before a
    request is made: the summary said ``…; requested http://…`` of a URL nothing was sent to."""
    first = "ConfigError: RequestOptions.thinking is Anthropic's extended-thinking budget"
    assert _said({"ConfigError": 3}, first) == f"; errors: 3 ConfigError (first: {first})"


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


class _Answered:
    """A Ray object ref whose answer is in."""

    def __init__(self, value: object) -> None:
        self.value = value


class _Method:
    def __init__(self, method: Any) -> None:
        self.method = method

    def remote(self, *args: object) -> _Answered:
        coroutine = self.method(*args)
        try:
            coroutine.send(None)  # the budget actor's methods never wait
        except StopIteration as done:
            return _Answered(done.value)
        raise AssertionError("the budget actor's method waited")


class _Handle:
    """A budget actor's handle, its calls answered at once (in this process, no Ray)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self.actor, name))


_RAY = SimpleNamespace(
    wait=lambda refs, timeout: (refs, []), get=lambda ref: cast("_Answered", ref).value
)


def test_a_long_pause_the_ray_driver_hears_of_late_is_still_said(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Ray driver asks the budget actor how long the run's pause holds once a heartbeat,
    and hears the answer a heartbeat later: a Retry-After of 10.5 s (a long pause, said by a
    local run) was 9.5 s left by then, and was never said."""
    from rxturn.batch import BatchConfig
    from rxturn.ray._backend import RayBackend
    from rxturn.ray._budget import BudgetActor

    clock = [100.0]
    actor = BudgetActor(None, None)
    actor.gate = LocalGate(actor.budget, clock=lambda: clock[0])
    backend = RayBackend(BatchConfig(provider="anthropic", model="m"), None, 1)
    backend._budget = _Handle(actor)
    monkeypatch.setattr(backend.gate, "now", lambda: clock[0])
    backend.gate.on_pause = PauseNotice(backend.gate.now)
    look = backend._look_at_waits
    look(_RAY)  # asks; no pause yet
    _Method(actor.pause).remote(10.5)  # an actor met a 429 with Retry-After: 10.5
    clock[0] += 1.0
    look(_RAY)  # reads "no pause" (asked before it began); asks again: 9.5 s left
    clock[0] += 1.0
    look(_RAY)  # reads 9.5 s left of 10.5
    for _ in range(12):  # the same pause, said once, as the heartbeats go on past its end
        clock[0] += 1.0
        look(_RAY)
    assert capsys.readouterr().err.splitlines() == [
        "rxturn batch: the provider's rate limit (Retry-After) holds every new request for 10 s; "
        "the run goes on by itself"
    ]
    _Method(actor.pause).remote(3.0)  # a short pause later: not said
    for _ in range(3):
        clock[0] += 1.0
        look(_RAY)
    assert capsys.readouterr().err == ""
