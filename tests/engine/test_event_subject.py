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

    subject.subscribe(on_next=bad)
    subject.subscribe(**_observer(log, "b"))
    _emit(subject, log, 1)  # the error reaches the emitter; b is not called
    _emit(subject, log, 2)  # the raising subscriber stays subscribed (as with Subject)


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
    "raising subscriber": (
        _raising_subscriber,
        [("raised", "RuntimeError"), ("raised", "RuntimeError")],
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
