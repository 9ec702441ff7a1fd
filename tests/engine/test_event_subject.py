"""``engine.events``' ``EventSubject`` behaves as ``reactivex``'s ``Subject`` in everything a
subscriber can see: each scenario runs on both and must log the same notifications and errors
(``Subject`` is the oracle), and the key outcomes are spelled out as well."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from reactivex.subject import Subject

from rxturn.clients import OpenAIClient
from rxturn.engine import TurnEngine
from rxturn.engine.fanout._subject import EventSubject
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.testing import MockResponse, MockTransport

Log = list[tuple[str, Any]]
Scenario = Callable[[Subject[int], Log], None]


def _observer(log: Log, name: str) -> dict[str, Any]:
    return {
        "on_next": lambda v: log.append((name, v)),
        "on_error": lambda e: log.append((f"{name} error", str(e))),
        "on_completed": lambda: log.append((f"{name} completed", None)),
    }


def _emit(subject: Subject[int], log: Log, value: int) -> None:
    try:
        subject.on_next(value)
    except Exception as exc:  # what the emitter sees
        log.append(("raised", type(exc).__name__))


def _values_then_completed(subject: Subject[int], log: Log) -> None:
    subject.subscribe(**_observer(log, "a"))
    subject.subscribe(**_observer(log, "b"))
    _emit(subject, log, 1)
    subject.on_completed()
    _emit(subject, log, 2)  # after the end: nobody hears it
    subject.subscribe(**_observer(log, "late"))  # a late subscriber gets the end at once


def _values_then_error(subject: Subject[int], log: Log) -> None:
    subject.subscribe(**_observer(log, "a"))
    _emit(subject, log, 1)
    subject.on_error(ValueError("boom"))
    _emit(subject, log, 2)
    subject.subscribe(**_observer(log, "late"))


def _disposed(subject: Subject[int], log: Log) -> None:
    subject.subscribe(**_observer(log, "a"))
    subject.dispose()
    _emit(subject, log, 1)
    subject.subscribe(**_observer(log, "late"))  # told through its on_error


def _unsubscribed(subject: Subject[int], log: Log) -> None:
    a = subject.subscribe(**_observer(log, "a"))
    subject.subscribe(**_observer(log, "b"))
    _emit(subject, log, 1)
    a.dispose()
    _emit(subject, log, 2)


def _subscribe_during_emission(subject: Subject[int], log: Log) -> None:
    def first(value: int) -> None:
        log.append(("a", value))
        if value == 1:  # a new subscriber hears the next value, not this one
            subject.subscribe(**_observer(log, "new"))

    subject.subscribe(on_next=first)
    _emit(subject, log, 1)
    _emit(subject, log, 2)


def _unsubscribe_during_emission(subject: Subject[int], log: Log) -> None:
    later: list[Any] = []

    def first(value: int) -> None:
        log.append(("a", value))
        if value == 1:  # disposing b's subscription stops its observer: b hears nothing more
            later[0].dispose()

    subject.subscribe(on_next=first)
    later.append(subject.subscribe(**_observer(log, "b")))
    _emit(subject, log, 1)
    _emit(subject, log, 2)


def _reentrant(subject: Subject[int], log: Log) -> None:
    def first(value: int) -> None:
        log.append(("a", value))
        if value < 3:
            subject.on_next(value + 1)  # an emission from inside an emission

    subject.subscribe(on_next=first)
    subject.subscribe(**_observer(log, "b"))
    _emit(subject, log, 1)


def _completed_during_emission(subject: Subject[int], log: Log) -> None:
    def first(value: int) -> None:
        log.append(("a", value))
        subject.on_completed()

    subject.subscribe(on_next=first)
    subject.subscribe(**_observer(log, "b"))
    _emit(subject, log, 1)
    _emit(subject, log, 2)


def _raising_subscriber(subject: Subject[int], log: Log) -> None:
    def bad(value: int) -> None:
        raise RuntimeError(f"bad {value}")

    subject.subscribe(**_observer(log, "a"))
    subject.subscribe(on_next=bad)
    subject.subscribe(**_observer(log, "b"))
    _emit(subject, log, 1)
    _emit(subject, log, 2)


SCENARIOS: dict[str, tuple[Scenario, Log]] = {
    "values then completed": (
        _values_then_completed,
        [
            ("a", 1),
            ("b", 1),
            ("a completed", None),
            ("b completed", None),
            ("late completed", None),
        ],
    ),
    "values then error": (
        _values_then_error,
        [("a", 1), ("a error", "boom"), ("late error", "boom")],
    ),
    "disposed": (
        _disposed,
        [("raised", "DisposedException"), ("late error", "Object has been disposed")],
    ),
    "unsubscribed": (_unsubscribed, [("a", 1), ("b", 1), ("b", 2)]),
    "subscribe during emission": (_subscribe_during_emission, [("a", 1), ("a", 2), ("new", 2)]),
    "unsubscribe during emission": (_unsubscribe_during_emission, [("a", 1), ("a", 2)]),
    "reentrant": (
        _reentrant,
        [("a", 1), ("a", 2), ("a", 3), ("b", 3), ("b", 2), ("b", 1)],
    ),
    "completed during emission": (
        _completed_during_emission,
        [("a", 1), ("b completed", None)],  # b, stopped, does not hear the 1 still on its way
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_event_subject_logs_what_a_subject_logs(name: str) -> None:
    scenario, expected = SCENARIOS[name]
    logs: list[Log] = []
    for subject in (Subject[int](), EventSubject[int]()):
        log: Log = []
        scenario(subject, log)
        logs.append(log)
    assert logs[0] == expected  # the scenario says what reactivex's Subject does
    assert logs[1] == logs[0]


def test_a_raising_subscriber_is_dropped_where_a_subject_lets_the_error_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The one departure from ``Subject``: there the error reaches the emitter and the
    subscribers after the raising one hear nothing, at every emission; here it is logged once,
    the raising subscriber is dropped, and everyone else hears every value."""
    log: Log = []
    _raising_subscriber(Subject[int](), log)
    assert log == [("a", 1), ("raised", "RuntimeError"), ("a", 2), ("raised", "RuntimeError")]
    log = []
    with caplog.at_level("ERROR", logger="rxturn.engine"):
        _raising_subscriber(EventSubject[int]("engine.events"), log)
    assert log == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert [r.getMessage() for r in caplog.records] == [
        "an engine.events subscriber raised; it is dropped, the turn goes on"
    ]
    assert "RuntimeError: bad 1" in caplog.text


def _openai_body(*texts: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"id": "c1", "model": "m", "choices": [choice]}).encode()

    return [
        *(chunk({"content": text}) + b"\n\n" for text in texts),
        chunk({}, "stop") + b"\n\ndata: [DONE]\n\n",
    ]


async def test_engine_events_is_an_event_subject_and_delivers_every_event() -> None:
    response = MockResponse(200, {"content-type": "text/event-stream"}, _openai_body("Hi", "!"))
    client = OpenAIClient(
        "m", api_key="k", base_url="http://127.0.0.1:1/v1", transport=MockTransport(response)
    )
    engine = TurnEngine(client)
    events = engine.events
    assert isinstance(events, EventSubject)
    assert isinstance(events, Subject)
    seen: list[Any] = []
    events.subscribe(on_next=seen.append)
    result = await engine.run("hi")
    assert result.message.text == "Hi!"
    assert seen == [
        MessageStart("c1", "m"),
        PartStart(0, "text"),
        Delta(0, "Hi"),
        Delta(0, "!"),
        PartStop(0),
        MessageDelta("end_turn", None),
        MessageStop(),
    ]


def _engine(*texts: str) -> TurnEngine:
    response = MockResponse(200, {"content-type": "text/event-stream"}, _openai_body(*texts))
    client = OpenAIClient(
        "m", api_key="k", base_url="http://127.0.0.1:1/v1", transport=MockTransport(response)
    )
    return TurnEngine(client)


async def test_a_raising_events_subscriber_costs_the_others_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One ``engine.events`` subscriber that raises is logged once and dropped: the subscribers
    before and after it hear every event, the turn's reply is whole."""
    engine = _engine("Hi", "!")
    before: list[Any] = []
    after: list[Any] = []
    calls: list[Any] = []

    def bad(event: Any) -> None:
        calls.append(event)
        raise RuntimeError("subscriber bug")

    engine.events.subscribe(on_next=before.append)
    engine.events.subscribe(on_next=bad)
    engine.events.subscribe(on_next=after.append)
    with caplog.at_level("ERROR", logger="rxturn.engine"):
        result = await engine.run("hi")
    assert result.message.text == "Hi!"
    assert len(before) == 7
    assert after == before
    assert len(calls) == 1  # dropped after its first error
    failures = [r for r in caplog.records if r.exc_info is not None]
    assert len(failures) == 1
    assert "engine.events subscriber raised" in failures[0].getMessage()
    assert "subscriber bug" in caplog.text


async def test_a_raising_turn_streams_subscriber_costs_the_others_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A ``turn_streams`` subscriber that raises on the emission does not keep the turn from
    the subscribers after it."""
    engine = _engine("ok")
    texts: list[str] = []

    def bad(stream: Any) -> None:
        raise RuntimeError("subscriber bug")

    def good(stream: Any) -> None:
        stream.events.subscribe(
            on_next=lambda e: texts.append(e.text) if isinstance(e, Delta) else None
        )

    engine.turn_streams.subscribe(on_next=bad)
    engine.turn_streams.subscribe(on_next=good)
    with caplog.at_level("ERROR", logger="rxturn.engine"):
        result = await engine.run("hi")
    assert result.message.text == "ok"
    assert texts == ["ok"]
    assert "engine.turn_streams subscriber raised" in caplog.text


async def test_engine_events_disposed_mid_turn_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A subscriber that disposes ``engine.events`` itself: the turn goes on, whole, and the
    refusal is logged once for the turn, not once for every event after it."""
    engine = _engine("a", "b", "c")
    seen: list[Any] = []

    def disposing(event: Any) -> None:
        seen.append(event)
        engine.events.dispose()

    engine.events.subscribe(on_next=disposing)
    with caplog.at_level("ERROR", logger="rxturn.engine"):
        result = await engine.run("hi")
    assert result.message.text == "abc"
    assert len(seen) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "engine.events refused an event; the turn goes on"
    ]
