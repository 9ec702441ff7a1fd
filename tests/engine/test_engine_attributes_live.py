"""The engine's attributes are read when a turn runs: assigning one after construction takes
effect on the next request (the engine's collaborators hold the engine, not copies)."""

from __future__ import annotations

import pytest

from rxturn import (
    AnthropicClient,
    ConfigError,
    HedgePolicy,
    HedgeTarget,
    Message,
    ObserverSet,
    RecordingObserver,
    RequestOptions,
    StreamHandler,
    TurnEngine,
)


def test_assigned_system_and_options_reach_the_next_request() -> None:
    client = AnthropicClient("client-model", api_key="k", base_url="http://127.0.0.1:9")
    engine = TurnEngine(client, system="first")
    engine.history.append(Message.user("hi"))
    assert engine.build_request().system == "first"
    assert engine.served_model() == "client-model"

    engine.system = "second"
    engine.request_options = RequestOptions(model="other-model")
    request = engine.build_request()
    assert request.system == "second"
    assert [m.text for m in request.messages] == ["hi"]
    assert engine.served_model() == "other-model"
    assert engine.routed_options().model == "other-model"


def test_reassigned_history_is_the_one_requests_read() -> None:
    client = AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9")
    engine = TurnEngine(client)
    engine.history = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    assert [m.text for m in engine.build_request().messages] == ["a", "b", "c"]


BAD_ASSIGNMENTS = [
    ("client", "claude"),
    ("system", 3),
    ("handler", "default"),
    ("fallback", ["backup"]),
    ("request_options", {"model": "x"}),
    ("request_options", "fast"),
    ("mode", "stream"),
    ("max_turns", 0),
    ("text_streamer", 3),
    ("observers", None),
    ("observers", ["junk"]),
    ("observers", RecordingObserver()),
    ("hedge", "backup"),
    ("counter", "tiktoken"),
    ("context_window", 100_000),
    ("compactor", "truncate"),
    ("memory", ["fact"]),
    ("memory_top_k", -1),
    ("scheduler", "asyncio"),
    ("failover", "yes"),
    ("tools", [print]),
    ("calibration", True),
]


@pytest.mark.parametrize(("name", "bad"), BAD_ASSIGNMENTS, ids=[n for n, _ in BAD_ASSIGNMENTS])
def test_a_wrong_value_assigned_is_refused_where_it_is_assigned(name: str, bad: object) -> None:
    """Each was accepted, and the next turn failed deep inside (an AttributeError: 'str' object
    has no attribute 'plan_turn', an IndexError for max_turns=0, ...) or, for mode, ran as if
    nothing was said."""
    client = AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9")
    engine = TurnEngine(client)
    before = getattr(engine, name)
    with pytest.raises(ConfigError, match=rf"engine\.{name} "):
        setattr(engine, name, bad)
    assert getattr(engine, name) is before


def test_assignments_that_could_not_act_are_refused_too() -> None:
    client = AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9")
    hedged = TurnEngine(client, hedge=HedgePolicy((HedgeTarget("b"),)))
    with pytest.raises(ConfigError, match="non_streaming"):
        hedged.mode = "non_streaming"
    plain = TurnEngine(client, mode="non_streaming")
    with pytest.raises(ConfigError, match="non_streaming"):
        plain.hedge = HedgePolicy((HedgeTarget("b"),))
    with pytest.raises(ConfigError, match=r"HedgeTarget\(client=\.\.\.\)"):
        hedged.hedge = HedgePolicy((HedgeTarget(client="other"),))
    # what the constructor takes, an assignment takes (None where the argument may be None)
    hedged.request_options = None  # pyright: ignore[reportAttributeAccessIssue]
    assert hedged.request_options == RequestOptions()
    hedged.hedge = None
    plain.handler = StreamHandler()
    plain.max_turns = 3


def test_assigned_observers_are_what_the_constructor_would_make_of_them() -> None:
    """Before, ``engine.observers = [rec]`` kept the list and the next turn failed deep inside
    (AttributeError: 'list' object has no attribute 'listening')."""
    client = AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9")
    engine = TurnEngine(client)
    rec = RecordingObserver()
    engine.observers = [rec]  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(engine.observers, ObserverSet) and list(engine.observers) == [rec]
    engine.observers.emit("on_turn_start", turn=0, query="hi")
    assert rec.names() == ["on_turn_start"]
    shared = ObserverSet([rec])
    engine.observers = shared
    assert engine.observers is shared
