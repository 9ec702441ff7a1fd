"""Observers: optional callbacks, registration order, isolation, and the delta fast path."""

from __future__ import annotations

import inspect
import logging
from typing import Any

import pytest

import rxturn.engine.observation.observers as observers_module
from rxturn.engine.observation.observers import (
    CALLBACKS,
    LoggingObserver,
    Observer,
    ObserverSet,
    RecordingObserver,
)
from rxturn.errors import ConfigError, ServerError
from rxturn.events import AttemptReset
from rxturn.messages import ToolCallPart, ToolResultPart, Usage

# One valid keyword set per callback (rxturn.engine.observation.observers.Observer), used to
# drive every callback.
SAMPLE_KWARGS: dict[str, dict[str, Any]] = {
    "on_run_start": {"session_id": "s1"},
    "on_run_end": {"success": True, "error": None, "total_turns": 2, "duration_ms": 12.5},
    "on_turn_start": {"turn": 0, "query": "hi"},
    "on_text_delta": {"turn": 0, "delta": "He"},
    "on_thinking_delta": {"turn": 0, "delta": "hmm"},
    "on_attempt_reset": {"turn": 0, "reset": AttemptReset(attempt=2, reason="reset by peer")},
    "on_response": {"turn": 0, "text": "Hello", "usage": Usage(input_tokens=5, output_tokens=1)},
    "on_stream_success": {"turn": 0, "model": "m", "input_tokens": 5, "output_tokens": 1},
    "on_stream_failure": {"turn": 0, "model": "m", "error": ServerError("HTTP 500: x")},
    "on_fallback": {"from_model": "m", "to_model": "b"},
    "on_model_switched": {"from_model": "m", "to_model": "b"},
    "on_turn_end": {
        "turn": 0,
        "success": True,
        "error": None,
        "duration_ms": 3.0,
        "input_tokens": 5,
        "output_tokens": 1,
    },
    "on_tool_call": {"turn": 0, "call": ToolCallPart("c1", "lookup", {"q": "x"})},
    "on_tool_result": {"turn": 0, "result": ToolResultPart("c1", "found")},
    "on_compaction": {"before_tokens": 9000, "after_tokens": 1200},
    "on_hedge": {
        "turn": 0,
        "turn_id": 7,
        "model": "m",
        "hedge_model": "b",
        "reason": "delay",
        "after": 2.0,
    },
    "on_hedge_skipped": {
        "turn": 0,
        "turn_id": 7,
        "model": "m",
        "hedge_model": "b",
        "reason": "budget",
    },
    "on_hedge_won": {"turn": 0, "turn_id": 7, "model": "m", "hedge_model": "b", "after": 2.5},
}


def test_callbacks_match_the_reference_surface() -> None:
    assert set(CALLBACKS) == set(SAMPLE_KWARGS)
    for name in CALLBACKS:
        params = inspect.signature(getattr(Observer, name)).parameters
        keyword_only = [p for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        assert [p.name for p in keyword_only] == list(SAMPLE_KWARGS[name]), name
        table_rows = (observers_module.__doc__ or "").splitlines()
        assert any(row.startswith(f"{name} ") for row in table_rows), "missing from the table"


@pytest.mark.parametrize("name", CALLBACKS, ids=CALLBACKS)
def test_base_observer_callbacks_are_no_ops(name: str) -> None:
    assert getattr(Observer(), name)(**SAMPLE_KWARGS[name]) is None


@pytest.mark.parametrize("name", CALLBACKS, ids=CALLBACKS)
def test_emit_reaches_every_callback_with_its_keywords(name: str) -> None:
    rec = RecordingObserver()
    ObserverSet([rec]).emit(name, **SAMPLE_KWARGS[name])
    assert rec.calls == [(name, SAMPLE_KWARGS[name])]


class Tagger(Observer):
    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag = tag
        self.log = log

    def on_turn_start(self, *, turn: int, query: str) -> None:
        self.log.append(f"{self.tag}:{turn}:{query}")

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.log.append(f"{self.tag}:{delta}")


def test_registration_order() -> None:
    log: list[str] = []
    observers = ObserverSet([Tagger("a", log)])
    observers.add(Tagger("b", log))
    observers.add(Tagger("c", log))
    observers.emit("on_turn_start", turn=1, query="q")
    observers.text_delta(1, "x")
    assert log == ["a:1:q", "b:1:q", "c:1:q", "a:x", "b:x", "c:x"]


class Exploding(Observer):
    def on_turn_start(self, *, turn: int, query: str) -> None:
        raise RuntimeError("observer bug")

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        raise ValueError("delta bug")

    def on_thinking_delta(self, *, turn: int, delta: str) -> None:
        raise KeyError("thinking bug")


@pytest.mark.parametrize(
    ("call", "callback"),
    [
        (lambda s: s.emit("on_turn_start", turn=0, query="q"), "on_turn_start"),
        (lambda s: s.text_delta(0, "d"), "on_text_delta"),
        (lambda s: s.thinking_delta(0, "t"), "on_thinking_delta"),
    ],
    ids=["emit", "text-delta", "thinking-delta"],
)
def test_a_raising_observer_is_logged_and_isolated(
    caplog: pytest.LogCaptureFixture, call: Any, callback: str
) -> None:
    before, after = RecordingObserver(), RecordingObserver()
    observers = ObserverSet([before, Exploding(), after])
    with caplog.at_level(logging.ERROR, logger="rxturn.engine.observers"):
        call(observers)
    assert len(before.calls) == len(after.calls) == 1
    [record] = [r for r in caplog.records if r.name == "rxturn.engine.observers"]
    assert "Exploding" in record.getMessage() and callback in record.getMessage()
    assert record.exc_info is not None


def test_an_observer_with_a_wrong_signature_is_refused_when_registered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # before, it was registered and every call of the callback raised a TypeError that was
    # logged at ERROR with its traceback and ignored: a log line per text delta, an observer
    # that never saw anything
    class Positional:
        def on_fallback(self, a: str, b: str) -> None:  # not keyword-compatible
            raise AssertionError("never called")

    class OldStyle(Observer):
        def on_text_delta(self, text: str) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            raise AssertionError("never called")

    for bad, callback in ((Positional(), "on_fallback"), (OldStyle(), "on_text_delta")):
        with pytest.raises(ConfigError, match=rf"{type(bad).__name__}\.{callback} cannot take"):
            ObserverSet([bad])  # pyright: ignore[reportArgumentType]
        with pytest.raises(
            ConfigError,
            match="turn, delta" if callback == "on_text_delta" else "from_model, to_model",
        ):
            ObserverSet().add(bad)  # pyright: ignore[reportArgumentType]

    class Flexible(Observer):  # keyword-compatible spellings stay welcome
        def on_text_delta(self, **kwargs: object) -> None:
            pass

        def on_fallback(self, *, from_model: str, to_model: str, extra: int = 0) -> None:
            pass

    assert len(ObserverSet([Flexible()])) == 1
    assert not caplog.records


def test_an_async_callback_is_refused_when_registered() -> None:
    # before, it was registered and each call made a coroutine nobody awaited: the observer
    # never ran, and every text delta printed a "never awaited" RuntimeWarning
    class Async(Observer):
        async def on_text_delta(self, *, turn: int, delta: str) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            raise AssertionError("never called")

    class AsyncCall:
        async def __call__(self, **_: object) -> None:
            raise AssertionError("never called")

    class Duck:
        on_turn_end = AsyncCall()

    for bad, callback in ((Async(), "on_text_delta"), (Duck(), "on_turn_end")):
        with pytest.raises(
            ConfigError,
            match=rf"{type(bad).__name__}\.{callback} is called synchronously, never awaited",
        ):
            ObserverSet([bad])  # pyright: ignore[reportArgumentType]


def test_base_exceptions_are_not_swallowed() -> None:
    class Interrupting(Observer):
        def on_run_start(self, *, session_id: str) -> None:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ObserverSet([Interrupting()]).emit("on_run_start", session_id="s")


def test_duck_typed_observers_work_with_only_some_callbacks() -> None:
    class OnlyFallback:
        def __init__(self) -> None:
            self.seen: list[tuple[str, str]] = []

        def on_fallback(self, *, from_model: str, to_model: str) -> None:
            self.seen.append((from_model, to_model))

    duck = OnlyFallback()
    observers = ObserverSet([duck])  # pyright: ignore[reportArgumentType]
    observers.emit("on_turn_start", turn=0, query="q")  # has no such method: skipped
    observers.text_delta(0, "x")
    observers.emit("on_fallback", from_model="m", to_model="b")
    assert duck.seen == [("m", "b")]
    assert observers.interested("on_fallback") and not observers.interested("on_turn_start")


def test_emit_rejects_an_unknown_callback_name() -> None:
    with pytest.raises(ConfigError, match="unknown observer callback 'on_turn_begin'"):
        ObserverSet().emit("on_turn_begin", turn=0)


def test_fast_path_lists_only_overriders_and_follow_add_remove() -> None:
    class TextOnly(Observer):
        def __init__(self) -> None:
            self.deltas: list[str] = []

        def on_text_delta(self, *, turn: int, delta: str) -> None:
            self.deltas.append(delta)

    observers = ObserverSet([Observer(), Observer()])
    assert len(observers) == 2
    assert not observers.wants_deltas
    assert not observers.interested("on_text_delta")
    text = TextOnly()
    observers.add(text)
    assert observers.wants_deltas
    assert observers.interested("on_text_delta") and not observers.interested("on_thinking_delta")
    observers.text_delta(3, "a")
    observers.thinking_delta(3, "never")
    assert text.deltas == ["a"]
    assert observers.remove(text) is True
    assert observers.remove(text) is False
    assert not observers.wants_deltas
    observers.text_delta(3, "b")
    assert text.deltas == ["a"]
    assert text not in observers and len(observers) == 2


def test_listening_says_whether_any_observer_is_registered_as_observers_come_and_go() -> None:
    empty = ObserverSet()
    assert not empty.listening
    plain = Observer()
    empty.add(plain)
    assert empty.listening  # even one that overrides nothing: interested() then answers
    assert empty.remove(plain) is True
    assert not empty.listening
    assert ObserverSet([Observer()]).listening


def test_fast_path_skips_inherited_no_ops_without_calling_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    observers = ObserverSet([Observer()])
    # Patching the base *after* the set was built proves the set never looks the method up again.
    monkeypatch.setattr(Observer, "on_text_delta", lambda self, **kw: calls.append("base"))
    observers.text_delta(0, "x")
    assert calls == []


def test_observer_removing_itself_mid_emit_does_not_skip_others() -> None:
    rec = RecordingObserver()

    class Quitter(Observer):
        def __init__(self, owner: ObserverSet) -> None:
            self.owner = owner

        def on_run_start(self, *, session_id: str) -> None:
            self.owner.remove(self)

    observers = ObserverSet()
    observers.add(Quitter(observers))
    observers.add(rec)
    observers.emit("on_run_start", session_id="s")
    assert rec.names() == ["on_run_start"]
    assert len(observers) == 1


def test_an_observer_added_mid_emit_hears_the_next_emit_not_this_one() -> None:
    rec = RecordingObserver()

    class Adder(Observer):
        def __init__(self, owner: ObserverSet) -> None:
            self.owner = owner

        def on_run_start(self, *, session_id: str) -> None:
            self.owner.add(rec)

    observers = ObserverSet()
    observers.add(Adder(observers))
    observers.emit("on_run_start", session_id="s")
    assert rec.names() == []
    observers.emit("on_turn_start", turn=0, query="q")
    assert rec.names() == ["on_turn_start"]


def test_a_callback_assigned_on_the_instance_is_heard_when_emitted() -> None:
    """Callbacks are looked up when emitted, on the instance: one assigned (or withdrawn)
    after the observer was added is honoured."""
    seen: list[int] = []
    watcher = Observer()
    observers = ObserverSet([watcher])
    assert not observers.interested("on_turn_start")
    watcher.on_turn_start = lambda *, turn, query: seen.append(turn)
    assert observers.interested("on_turn_start")
    assert [o for o, _ in observers.targets("on_turn_start")] == [watcher]
    observers.emit("on_turn_start", turn=7, query="q")
    watcher.on_turn_start = None  # pyright: ignore[reportAttributeAccessIssue]
    assert not observers.interested("on_turn_start")
    observers.emit("on_turn_start", turn=8, query="q")
    assert seen == [7]


def test_an_observer_answering_through_getattr_is_heard() -> None:
    heard: list[tuple[str, dict[str, object]]] = []

    class Proxy:
        def __getattr__(self, name: str) -> object:
            if name.startswith("on_"):
                return lambda **kwargs: heard.append((name, kwargs))
            raise AttributeError(name)

    observers = ObserverSet([Proxy()])  # pyright: ignore[reportArgumentType]
    observers.emit("on_fallback", from_model="m", to_model="b")
    observers.text_delta(0, "x")
    assert heard == [
        ("on_fallback", {"from_model": "m", "to_model": "b"}),
        ("on_text_delta", {"turn": 0, "delta": "x"}),
    ]
    assert observers.interested("on_request") and observers.wants_deltas


def test_interested_in_a_name_that_is_no_callback_is_false() -> None:
    assert not ObserverSet([RecordingObserver()]).interested("on_turn_begin")


def test_add_none_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        ObserverSet().add(None)  # pyright: ignore[reportArgumentType]


def test_the_same_observer_may_be_registered_twice() -> None:
    rec = RecordingObserver()
    observers = ObserverSet([rec, rec])
    observers.text_delta(0, "x")
    assert rec.names() == ["on_text_delta", "on_text_delta"]
    assert observers.remove(rec) and len(observers) == 1


def test_recording_observer_helpers() -> None:
    rec = RecordingObserver()
    observers = ObserverSet([rec])
    observers.emit("on_turn_start", turn=0, query="q")
    observers.text_delta(0, "He")
    observers.text_delta(0, "llo")
    assert rec.names() == ["on_turn_start", "on_text_delta", "on_text_delta"]
    assert [c["delta"] for c in rec.calls_of("on_text_delta")] == ["He", "llo"]
    rec.clear()
    assert rec.calls == []


@pytest.mark.parametrize("name", CALLBACKS, ids=CALLBACKS)
def test_logging_observer_one_line_per_callback(
    caplog: pytest.LogCaptureFixture, name: str
) -> None:
    logger = logging.getLogger("test.rxturn.turn")
    observers = ObserverSet([LoggingObserver(logger)])
    with caplog.at_level(logging.DEBUG, logger="test.rxturn.turn"):
        observers.emit(name, **SAMPLE_KWARGS[name])
    [record] = caplog.records
    expected_level = logging.DEBUG if name.endswith("_delta") else logging.INFO
    assert record.levelno == expected_level
    assert record.getMessage().startswith(name + " ")
    assert record.rxturn_callback == name  # pyright: ignore[reportAttributeAccessIssue]
    assert record.rxturn_fields == SAMPLE_KWARGS[name]  # pyright: ignore[reportAttributeAccessIssue]


def test_logging_observer_formats_compactly_and_omits_tool_inputs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.rxturn.fmt")
    observers = ObserverSet([LoggingObserver(logger)])
    with caplog.at_level(logging.DEBUG, logger="test.rxturn.fmt"):
        observers.emit("on_tool_call", turn=1, call=ToolCallPart("c9", "search", {"secret": "s3"}))
        observers.emit("on_turn_start", turn=1, query="x" * 500)
        observers.emit("on_stream_failure", turn=1, model="m", error=ServerError("HTTP 502: bad"))
    first, second, third = (r.getMessage() for r in caplog.records)
    assert first == "on_tool_call turn=1 call=search#c9"
    assert "s3" not in first
    assert "(+300 chars)" in second and len(second) < 300
    assert third == "on_stream_failure turn=1 model='m' error='ServerError: HTTP 502: bad'"


def test_logging_observer_is_silent_below_its_level(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.rxturn.quiet")
    observers = ObserverSet([LoggingObserver(logger)])
    with caplog.at_level(logging.INFO, logger="test.rxturn.quiet"):
        observers.text_delta(0, "x")
        observers.emit("on_turn_start", turn=0, query="q")
    assert [r.levelno for r in caplog.records] == [logging.INFO]
