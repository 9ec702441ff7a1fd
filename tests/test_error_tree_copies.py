"""Every error of the tree survives pickle, copy.copy and copy.deepcopy whole.

Batch workers and Ray actors ship errors between processes by pickling them; a class whose
``__init__`` takes other arguments than its message must still come back as the same class
with the same message, ``args``, attributes and notes.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import pytest

import rxturn.batch
from rxturn import errors as E
from rxturn.batch import (
    BatchError,
    BatchInputError,
    BatchLockedError,
    BatchOutputError,
    BatchWriteError,
)


def _progressed(err: E.RateLimitError) -> E.RateLimitError:
    err.note_progress(partial=True, events=7)
    return err


#: One instance of each class, every attribute off its default where the class has one.
_INSTANCES: list[Callable[[], E.RxturnError]] = [
    lambda: E.RxturnError("root"),
    lambda: E.ConfigError("timeout must be positive, got -1"),
    lambda: E.Cancelled(),
    lambda: E.ProviderError("provider failed"),
    lambda: E.TransportError("broken pipe", retryable=False),
    lambda: E.ConnectError("cannot connect to http://127.0.0.1:9/v1", retryable=False),
    lambda: E.ReadError("server disconnected"),
    lambda: E.APIStatusError(
        "HTTP 418",
        status_code=418,
        body="teapot",
        retry_after=1.5,
        request_id="req_1",
        error_type="teapot_error",
        should_retry=False,
    ),
    lambda: E.BadRequestError("HTTP 400: bad", body='{"error": "bad"}'),
    lambda: E.ContextOverflowError("prompt is too long"),
    lambda: E.AuthenticationError("HTTP 401", request_id="req_2"),
    lambda: E.PermissionDeniedError("HTTP 403"),
    lambda: E.NotFoundError("HTTP 404: no such model"),
    lambda: E.RequestTimeoutError("HTTP 408"),
    lambda: _progressed(E.RateLimitError("HTTP 429", retry_after=3.0)),
    lambda: E.OverloadedError("HTTP 529", status_code=529),
    lambda: E.ServerError("HTTP 502", status_code=502),
    lambda: E.ProviderStreamError("bad request", error_type="invalid_request_error"),
    lambda: E.UnexpectedResponseError(
        status_code=200,
        content_type="text/html",
        url="http://127.0.0.1:9/v1/messages",
        head="<html>",
        expected="an event stream",
        reason="an HTML page",
        retryable=False,
    ),
    lambda: E.StreamProtocolError("invalid UTF-8", where="line 3"),
    lambda: E.TruncatedStreamError(5, where="line 9"),
    lambda: E.DecompressionLimitError(
        "inflated past 10 bytes", limit="max_decompressed_bytes", value=10.0, where="byte 4"
    ),
    lambda: E.InvalidToolInputError("unexpected end", '{"a": ', where="block 1"),
    lambda: E.StreamTimeoutError(
        "idle", after=2.0, events=3, partial=True, elapsed=4.5, consecutive=2
    ),
    lambda: E.RateLimitEscalation(4, 2.0),
    lambda: E.RetryAfterBeyondDeadline(2, 90.0, 12.0),
    lambda: E.RescueFailed(E.ReadError("reset"), E.ServerError("HTTP 500")),
    lambda: E.RescueTimeoutError(30.0),
    lambda: E.FallbackExhausted("model-a", ["model-b", "model-c"]),
    lambda: E.ToolTimeoutError("search", 30.0),
    lambda: BatchError("cannot go on"),
    lambda: BatchInputError("line 3: not JSON", line=3),
    lambda: BatchOutputError("not an output line"),
    lambda: BatchWriteError("disk full"),
    lambda: BatchLockedError("another run holds the lock"),
]


def _public_classes() -> set[type[BaseException]]:
    assert rxturn.batch  # the batch errors are part of the tree once imported
    found: set[type[BaseException]] = set()
    todo: list[type[BaseException]] = [E.RxturnError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("rxturn") and not cls.__name__.startswith("_"):
            found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_the_table_has_every_class_of_the_tree() -> None:
    shown = {type(make()) for make in _INSTANCES}
    assert _public_classes() - shown == set()


def _same(before: E.RxturnError, after: object) -> None:
    assert type(after) is type(before)
    assert isinstance(after, E.RxturnError)
    assert str(after) == str(before)
    assert repr(after) == repr(before)
    assert after.args == before.args
    assert E.is_retryable(after) is E.is_retryable(before)
    mine = {k: v for k, v in vars(before).items() if k not in ("stream_error", "rescue_error")}
    theirs = {k: v for k, v in vars(after).items() if k not in ("stream_error", "rescue_error")}
    assert theirs == mine
    if isinstance(before, E.RescueFailed):
        assert isinstance(after, E.RescueFailed)
        for name in ("stream_error", "rescue_error"):
            was, now = getattr(before, name), getattr(after, name)
            assert (type(now), str(now)) == (type(was), str(was))


_COPIES: dict[str, Callable[[E.RxturnError], object]] = {
    "pickle": lambda err: pickle.loads(pickle.dumps(err)),
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
}


@pytest.mark.parametrize("how", sorted(_COPIES))
@pytest.mark.parametrize("make", _INSTANCES, ids=lambda make: type(make()).__name__)
def test_an_error_comes_back_whole(make: Callable[[], E.RxturnError], how: str) -> None:
    err = make()
    err.add_note("row 12")
    back = _COPIES[how](err)
    _same(err, back)
    assert getattr(back, "__notes__", None) == ["row 12"]


@pytest.mark.parametrize("make", _INSTANCES, ids=lambda make: type(make()).__name__)
def test_a_message_is_one_bounded_line(make: Callable[[], E.RxturnError]) -> None:
    err = make()
    for text in (str(err), repr(err)):
        assert text.strip()
        assert "\n" not in text and "\r" not in text
        assert len(text) < 400


@pytest.mark.parametrize("make", _INSTANCES, ids=lambda make: type(make()).__name__)
def test_args_hold_the_message(make: Callable[[], E.RxturnError]) -> None:
    """``args`` is what ``traceback``, loggers and ``type(err)(*err.args)`` idioms show."""
    err = make()
    assert err.args == (err.message,)


def test_a_rescue_failure_over_an_error_whose_str_raises_is_still_made() -> None:
    # the two errors may be a client's own, with a __str__ of its own: building the message
    # raised that __str__'s error in place of the RescueFailed
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError("no words")

    error = E.RescueFailed(Unprintable(), RuntimeError("the rescue\nfailed"))
    assert str(error) == (
        "streaming failed (); the non-streaming rescue request failed too: the rescue failed"
    )
