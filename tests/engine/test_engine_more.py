"""More of the engine: resets, rescue adoption, tools, limits, model switching (ref §6, §9.6)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from rxturn import (
    AnthropicClient,
    BreakerState,
    ConfigError,
    FallbackManager,
    FallbackPolicy,
    Message,
    RecordingObserver,
    StopReason,
    StreamHandler,
    TurnEngine,
)
from rxturn.resilience.policies import RetryPolicy

FAST = StreamHandler(retry=RetryPolicy(base_delay=0.001, max_delay=0.002))


async def test_a_dropped_attempt_never_leaks_into_the_reply(fake_client: Any) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    scenario = {
        "models": {
            "*": [
                {"text": text, "chunk_chars": 5, "drop_after_events": 6},
                {"text": text, "chunk_chars": 5},
            ]
        }
    }
    async with fake_client(scenario) as (_, client):
        shown: list[str] = []
        observer = RecordingObserver()
        engine = TurnEngine(client, handler=FAST, observers=[observer], text_streamer=shown.append)
        result = await engine.run("q")
    assert result.text == text  # exactly once: the failed attempt's fragments were discarded
    assert result.turns[0].attempts == 2
    resets = [kw["reset"] for name, kw in observer.calls if name == "on_attempt_reset"]
    assert [r.attempt for r in resets] == [2]
    # observers saw the failed attempt's deltas first, then the reset, then the whole retry
    seq = [name for name, _ in observer.calls if name in ("on_text_delta", "on_attempt_reset")]
    cut = seq.index("on_attempt_reset")
    assert 0 < cut < len(seq) - 1
    retry = "".join(d for d in shown[cut:])
    assert retry == text
    assert engine.session.runs[0].turns[0].attempts == 2


async def test_a_rescued_reply_is_adopted_wholesale(fake_client: Any) -> None:
    drop = {"text": "partial partial partial", "chunk_chars": 4, "drop_after_events": 4}
    scenario = {"models": {"*": [drop, drop, drop, drop, {"text": "rescued whole"}]}}
    async with fake_client(scenario) as (fake, client):
        engine = TurnEngine(client, handler=FAST)
        result = await engine.run("q")
        assert [r.get("stream") for r in fake.requests] == [True, True, True, True, False]
    assert result.text == "rescued whole"
    assert result.turns[0].rescued is True and result.turns[0].attempts == 4
    assert engine.session.runs[0].turns[0].rescued is True


async def test_tool_errors_go_back_to_the_model(fake_client: Any) -> None:
    scenario = {
        "models": {
            "*": [
                {
                    "tool_calls": [
                        {"id": "a", "name": "divide", "input": {"x": 1, "y": 0}},
                        {"id": "b", "name": "missing", "input": {}},
                        {"id": "c", "name": "divide", "input": {"x": "one"}},
                    ]
                },
                {"text": "sorry"},
            ]
        }
    }

    def divide(x: float, y: float) -> float:
        return x / y

    async with fake_client(scenario) as (fake, client):
        engine = TurnEngine(client, tools=[divide])
        await engine.run("divide")
        results = fake.requests[1]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["a", "b", "c"]
    assert all(r.get("is_error") is True for r in results)
    assert "ZeroDivisionError" in results[0]["content"]
    assert "unknown tool 'missing'" in results[1]["content"]
    assert "invalid arguments" in results[2]["content"]


async def test_max_turns_bounds_the_agent_loop(fake_client: Any) -> None:
    scenario = {"models": {"*": [{"tool_calls": [{"id": "t", "name": "again", "input": {}}]}]}}

    def again() -> str:
        return "go on"

    async with fake_client(scenario) as (fake, client):
        engine = TurnEngine(client, tools=[again], max_turns=3)
        result = await engine.run("loop")
        assert len(fake.requests) == 3
    assert result.hit_max_turns is True
    assert result.stop_reason is StopReason.TOOL_CALL


async def test_switch_model_notifies_and_resets_the_breaker(fake_client: Any) -> None:
    async with fake_client({"models": {"*": [{"text": "ok"}]}}) as (fake, client):
        observer = RecordingObserver()
        breaker = FallbackManager("m1", ["backup"], policy=FallbackPolicy(trip_threshold=0))
        engine = TurnEngine(client, fallback=breaker, observers=[observer])
        breaker.record_failure(breaker_kind())
        assert breaker.state is BreakerState.FALLBACK
        engine.switch_model("  m2 ")
        engine.switch_model("m3")
        with pytest.raises(ConfigError):
            engine.switch_model("   ")
        await engine.run("q")
        assert fake.requests[-1]["model"] == "m3"
    switched = [kw for name, kw in observer.calls if name == "on_model_switched"]
    assert switched == [
        {"from_model": "backup", "to_model": "m2"},
        {"from_model": "m2", "to_model": "m3"},
    ]
    assert breaker.state is BreakerState.PRIMARY and breaker.primary == "m3"


@pytest.mark.parametrize(
    ("call", "says"),
    [
        # before: AttributeError ('str' object has no attribute 'text')
        (
            lambda e: e.summarize("the whole chat"),
            r"^summarize\(messages=\.\.\.\) must be a sequence of Message, got str$",
        ),
        (lambda e: e.summarize([None]), r"^summarize\(messages=\.\.\.\)\[0\] is a NoneType"),
        # before: ValueError (Python prints no int of more than 4300 digits)
        (
            lambda e: e.switch_model(10**5000),
            r"^switch_model needs a model name, got an integer of about 5001 digits$",
        ),
    ],
    ids=["summarize-str", "summarize-none", "switch-giant-int"],
)
async def test_an_engine_method_given_a_wrong_value_is_a_config_error(
    call: Callable[[TurnEngine], object], says: str
) -> None:
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match=says):
        result = call(engine)
        if inspect.isawaitable(result):
            await result


def breaker_kind() -> Any:
    from rxturn import FailureKind

    return FailureKind.TRANSIENT


async def test_usage_may_be_absent(fake_client: Any) -> None:
    async with fake_client({"models": {"*": [{"text": "no usage", "usage": None}]}}, "openai") as (
        _,
        client,
    ):
        observer = RecordingObserver()
        result = await TurnEngine(client, observers=[observer]).run("q")
    assert result.message.usage is None
    success = next(kw for name, kw in observer.calls if name == "on_stream_success")
    assert (success["input_tokens"], success["output_tokens"]) == (0, 0)


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
async def test_every_provider_serves_a_tool_loop(fake_client: Any, provider: str) -> None:
    scenario = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "w", "name": "weather", "input": {"city": "Oslo"}}]},
                {"text": "Cold."},
            ]
        }
    }

    def weather(city: str) -> str:
        return f"{city}: -3 C"

    async with fake_client(scenario, provider) as (_, client):
        result = await TurnEngine(client, tools=[weather]).run("weather?")
    assert result.text == "Cold."
    assert result.turns[0].message.tool_calls[0].input == {"city": "Oslo"}


@pytest.mark.parametrize(
    ("transient", "says"),
    [
        ("hello", "got str; to send a prompt, use run(prompt)"),
        (Message.user("hi"), "got Message; to send a prompt"),
        (["hello"], "is a str, where a Message belongs: use Message.user"),
        (42, "got int"),
    ],
)
async def test_turn_rejects_transients_that_are_not_messages(
    fake_client: Any, transient: Any, says: str
) -> None:
    async with fake_client({"models": {"*": [{"text": "never"}]}}) as (fake, client):
        engine = TurnEngine(client)
        with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
            await engine.turn(transient)
        assert fake.requests == []  # nothing was sent


@pytest.mark.parametrize("prompt", [42, b"hello", ["hi"]])
async def test_run_rejects_a_prompt_that_is_not_text_or_a_message(
    fake_client: Any, prompt: Any
) -> None:
    async with fake_client({"models": {"*": [{"text": "never"}]}}) as (fake, client):
        engine = TurnEngine(client)
        with pytest.raises(ConfigError, match=f"got {type(prompt).__name__}"):
            await engine.run(prompt)
        assert fake.requests == [] and engine.history == []
