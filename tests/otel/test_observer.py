"""OTelObserver against the fake provider on 127.0.0.1, collected by the SDK's in-memory pipelines.

Each test runs real turns over loopback HTTP and reads back what the SDK exported: the span tree
(``invoke_agent`` → ``chat`` → ``rxturn.attempt``, ``execute_tool``), the metrics and the
``gen_ai.client.inference.operation.details`` log records.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from rxturn import (
    AnthropicClient,
    FallbackManager,
    OpenAIClient,
    StreamHandler,
    TurnEngine,
)
from rxturn.errors import AuthenticationError, Cancelled, ServerError
from rxturn.messages import RequestOptions
from rxturn.resilience.policies import RetryPolicy
from rxturn.testing import FakeProvider

from .conftest import Telemetry, context_of
from .secrets import assert_secret_absent

SECRET = "sk-ant-OTEL-SECRET-4242"
USAGE = {"input_tokens": 11, "output_tokens": 3}


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


async def run(
    telemetry: Telemetry,
    script: dict[str, Any],
    *,
    prompt: str = "Say hi",
    model: str = "primary",
    observer_kwargs: dict[str, Any] | None = None,
    **engine_kwargs: Any,
) -> tuple[Any, TurnEngine]:
    observer = telemetry.observer(**(observer_kwargs or {}))
    async with (
        FakeProvider(script) as fake,
        AnthropicClient(model, api_key=SECRET, base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer], **engine_kwargs)
        result = await engine.run(prompt)
    assert observer.open_turns == 0
    return result, engine


def the(spans: list[Any]) -> Any:
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


# ----------------------------------------------------------------------------- a retried turn


async def test_a_529_then_success_is_one_chat_span_with_two_attempts(telemetry: Telemetry) -> None:
    script = {
        "models": {
            "primary": [
                {"status": 529, "retry_after": 0.05},
                {"text": "Hello there", "usage": USAGE},
            ]
        }
    }
    result, _ = await run(telemetry, script, handler=StreamHandler.default())
    assert result.text == "Hello there"

    agent = the(telemetry.named("invoke_agent"))
    chat = the(telemetry.named("chat "))
    assert agent.name == "invoke_agent rxturn" and agent.kind is SpanKind.INTERNAL
    assert chat.name == "chat primary" and chat.kind is SpanKind.CLIENT
    assert chat.parent is not None and chat.parent.span_id == agent.context.span_id
    first, second = telemetry.children(chat)
    assert [s.name for s in (first, second)] == ["rxturn.attempt", "rxturn.attempt"]

    # the failed attempt: its status code, error type, no usage (the 529 reported none)
    a1 = attrs(first)
    assert a1["rxturn.attempt.number"] == 1 and a1["rxturn.attempt.kind"] == "stream"
    assert a1["http.response.status_code"] == 529
    assert a1["error.type"] == "OverloadedError"
    assert first.status.status_code is StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in a1
    # the retry: the wait before it covers the provider's Retry-After
    a2 = attrs(second)
    assert a2["rxturn.attempt.number"] == 2 and a2["rxturn.attempt.outcome"] == "served"
    assert a2["rxturn.attempt.after"] == "OverloadedError"
    assert a2["rxturn.attempt.wait"] >= 0.05
    assert second.status.status_code is StatusCode.UNSET

    c = attrs(chat)
    assert c["gen_ai.operation.name"] == "chat"
    assert c["gen_ai.provider.name"] == "anthropic"
    assert c["gen_ai.request.model"] == "primary"
    assert c["server.address"] == "127.0.0.1" and isinstance(c["server.port"], int)
    assert c["gen_ai.response.model"] == "primary"
    assert c["gen_ai.response.id"] == result.message.id != ""
    assert tuple(c["gen_ai.response.finish_reasons"]) == ("end_turn",)
    # usage equals the reply's
    assert (c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) == (11, 3)
    assert c["rxturn.attempts"] == 2 and c["rxturn.rescued"] is False
    assert chat.status.status_code is StatusCode.UNSET

    # metrics: one duration point, billed tokens by type, attempts by outcome, the wait
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and "error.type" not in duration.attributes
    tokens = {
        p.attributes["gen_ai.token.type"]: p.sum
        for p in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 11, "output": 3}
    outcomes = {
        p.attributes["rxturn.attempt.outcome"]: p.value for p in telemetry.points("rxturn.attempts")
    }
    assert outcomes == {"OverloadedError": 1, "served": 1}
    (wait,) = telemetry.points("rxturn.rate_limit.wait")
    assert wait.count == 1 and wait.sum >= 0.05
    (ttfc,) = telemetry.points("gen_ai.client.operation.time_to_first_chunk")
    assert ttfc.count == 1 and ttfc.sum <= duration.sum


async def test_the_invoke_agent_span_names_the_agent_the_conversation_and_the_provider(
    telemetry: Telemetry,
) -> None:
    # docs/observability.md: gen_ai.operation.name = invoke_agent, gen_ai.agent.name = rxturn,
    # gen_ai.conversation.id = the engine's session id, gen_ai.provider.name; error.type when
    # the run failed (nothing pinned these four)
    _, engine = await run(telemetry, {"models": {"*": [{"text": "ok"}]}})
    first = attrs(the(telemetry.named("invoke_agent")))
    assert first["gen_ai.operation.name"] == "invoke_agent"
    assert first["gen_ai.agent.name"] == "rxturn"
    assert first["gen_ai.conversation.id"] == engine.session.id != ""
    assert first["gen_ai.provider.name"] == "anthropic"
    assert "error.type" not in first
    telemetry.span_exporter.clear()
    with pytest.raises(AuthenticationError):
        await run(telemetry, {"models": {"*": [{"status": 401}]}})
    failed = the(telemetry.named("invoke_agent"))
    assert attrs(failed)["error.type"] == "AuthenticationError"
    assert failed.status.status_code is StatusCode.ERROR


async def test_the_conventions_bucket_boundaries_are_used(telemetry: Telemetry) -> None:
    await run(telemetry, {"models": {"*": [{"text": "ok", "usage": USAGE}]}})
    (usage_point, *_) = telemetry.points("gen_ai.client.token.usage")
    assert tuple(usage_point.explicit_bounds) == (
        1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
    )  # fmt: skip
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert tuple(duration.explicit_bounds) == (
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    )  # fmt: skip
    assert telemetry.metric("gen_ai.client.token.usage").unit == "{token}"
    assert telemetry.metric("gen_ai.client.operation.duration").unit == "s"


async def test_billed_usage_counts_the_discarded_attempt(telemetry: Telemetry) -> None:
    script = {
        "models": {
            "*": [
                {"text": "Doomed", "usage": {"input_tokens": 7, "output_tokens": 1},
                 "drop_after_events": 6},
                {"text": "Kept", "usage": USAGE},
            ]
        }
    }  # fmt: skip
    handler = StreamHandler(retry=RetryPolicy(max_retries=1, base_delay=0.01))
    result, engine = await run(telemetry, script, handler=handler)
    (turn,) = engine.session.runs[0].turns
    chat = the(telemetry.named("chat "))
    c = attrs(chat)
    first, _ = telemetry.children(chat)
    assert attrs(first)["gen_ai.usage.input_tokens"] == 7  # what the failed attempt reported
    assert (
        c["rxturn.usage.discarded.input_tokens"],
        c["rxturn.usage.discarded.output_tokens"],
    ) == (7, 1)
    assert turn.billed_usage is not None
    billed = (turn.billed_usage.input_tokens, turn.billed_usage.output_tokens)
    assert billed == (18, 4)
    assert (c["rxturn.usage.billed.input_tokens"], c["rxturn.usage.billed.output_tokens"]) == billed
    tokens = {
        p.attributes["gen_ai.token.type"]: p.sum
        for p in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 18, "output": 4}
    assert (c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) == (11, 3)
    assert result.text == "Kept"


async def test_no_usage_reported_means_no_token_point(telemetry: Telemetry) -> None:
    await run(telemetry, {"models": {"*": [{"text": "ok", "usage": None}]}})
    assert telemetry.points("gen_ai.client.token.usage") == []
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.count == 1


async def test_offline_estimates_only_when_asked(telemetry: Telemetry) -> None:
    await run(
        telemetry,
        {"models": {"*": [{"text": "a reply of several words", "usage": None}]}},
        observer_kwargs={"count_offline": True},
    )
    points = telemetry.points("gen_ai.client.token.usage")
    assert {p.attributes["gen_ai.token.type"] for p in points} == {"input", "output"}
    assert all(p.attributes["rxturn.usage.source"] == "estimate" for p in points)
    assert all(p.sum > 0 for p in points)


# ----------------------------------------------------------------------------- rescue, failover


async def test_a_dropped_stream_then_the_rescue(telemetry: Telemetry) -> None:
    script = {
        "models": {
            "primary": [
                {"text": "DOOMED partial words here", "drop_after_events": 3},
                {"text": "Rescued reply", "usage": USAGE},
            ]
        }
    }
    handler = StreamHandler(retry=RetryPolicy(max_retries=0))
    result, _ = await run(
        telemetry, script, handler=handler, observer_kwargs={"capture_content": "SPAN_AND_EVENT"}
    )
    assert result.text == "Rescued reply"
    chat = the(telemetry.named("chat "))
    stream, rescue = telemetry.children(chat)
    assert attrs(stream)["rxturn.attempt.kind"] == "stream"
    assert attrs(stream)["error.type"] == "ReadError"  # the connection dropped mid-stream
    assert attrs(rescue)["rxturn.attempt.kind"] == "rescue"
    assert attrs(rescue)["rxturn.attempt.outcome"] == "served"
    c = attrs(chat)
    assert c["rxturn.rescued"] is True and c["rxturn.attempts"] == 2
    assert (c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) == (11, 3)
    # the output is the committed reply only: nothing of the failed attempt is exported
    output = json.loads(c["gen_ai.output.messages"])
    assert output == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Rescued reply"}],
         "finish_reason": "end_turn"}
    ]  # fmt: skip
    assert_secret_absent(telemetry, "DOOMED")


async def test_failover_reports_the_served_model(telemetry: Telemetry) -> None:
    script = {
        "models": {
            "primary": [{"status": 404, "error_type": "not_found_error"}],
            "backup": [{"text": "backup served", "usage": USAGE}],
        }
    }
    result, _ = await run(
        telemetry,
        script,
        fallback=FallbackManager("primary", ["backup"]),
        failover=True,
    )
    assert result.text == "backup served"
    chat = the(telemetry.named("chat "))
    c = attrs(chat)
    assert chat.name == "chat primary"
    assert c["gen_ai.request.model"] == "primary"
    assert c["gen_ai.response.model"] == "backup"
    first, second = telemetry.children(chat)
    assert (attrs(first)["gen_ai.request.model"], attrs(first)["error.type"]) == (
        "primary",
        "NotFoundError",
    )
    assert attrs(first)["http.response.status_code"] == 404
    assert attrs(second)["gen_ai.request.model"] == "backup"
    (event,) = [e for e in chat.events if e.name == "rxturn.failover"]
    assert dict(event.attributes or {}) == {
        "rxturn.from_model": "primary",
        "rxturn.to_model": "backup",
        "rxturn.attempt.number": 2,
    }
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.attributes["gen_ai.response.model"] == "backup"


async def test_a_breaker_trip_is_an_event_on_the_failing_turn(telemetry: Telemetry) -> None:
    script = {"models": {"primary": [{"status": 500}], "backup": [{"text": "ok"}]}}
    observer = telemetry.observer()
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("primary", api_key=SECRET, base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, observers=[observer], fallback=FallbackManager("primary", ["backup"])
        )
        for _ in range(3):
            with pytest.raises(ServerError):
                await engine.run("hi")
        await engine.run("hi again")
    chats = sorted(telemetry.named("chat "), key=lambda s: s.start_time or 0)
    assert [s.name for s in chats] == ["chat primary"] * 3 + ["chat backup"]
    events = [[e.name for e in s.events] for s in chats]
    assert events == [[], [], ["rxturn.breaker.switch"], []]
    trip = chats[2].events[0]
    assert dict(trip.attributes or {}) == {
        "rxturn.from_model": "primary",
        "rxturn.to_model": "backup",
    }


# ----------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("entry", "error", "status"),
    [
        ({"status": 401, "error_type": "authentication_error"}, AuthenticationError, 401),
        ({"status": 500}, ServerError, 500),
    ],
)
async def test_a_failed_turn_is_an_error_span_with_its_error_type(
    telemetry: Telemetry, entry: dict[str, Any], error: type[Exception], status: int
) -> None:
    observer = telemetry.observer()
    async with (
        FakeProvider({"models": {"*": [entry]}}) as fake,
        AnthropicClient("primary", api_key=SECRET, base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer])
        with pytest.raises(error):
            await engine.run("hi")
    assert observer.open_turns == 0
    name = error.__name__
    chat = the(telemetry.named("chat "))
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == name
    assert "gen_ai.response.model" not in attrs(chat)
    (attempt,) = telemetry.children(chat)
    assert attrs(attempt)["http.response.status_code"] == status
    agent = the(telemetry.named("invoke_agent"))
    assert agent.status.status_code is StatusCode.ERROR
    assert attrs(agent)["error.type"] == name
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == name
    assert telemetry.points("gen_ai.client.token.usage") == []
    assert_secret_absent(telemetry, SECRET)


# ----------------------------------------------------------------------------- tools


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


async def test_an_agent_run_with_a_tool(telemetry: Telemetry) -> None:
    script = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "call_1", "name": "lookup", "input": {"city": "Oslo"}}],
                 "usage": USAGE},
                {"text": "It is sunny in Oslo.", "usage": USAGE},
            ]
        }
    }  # fmt: skip
    result, _ = await run(telemetry, script, tools=[lookup])
    assert result.text == "It is sunny in Oslo."
    agent = the(telemetry.named("invoke_agent"))
    below = telemetry.children(agent)
    assert [s.name for s in below] == ["chat primary", "execute_tool lookup", "chat primary"]
    tool = below[1]
    t = attrs(tool)
    assert t["gen_ai.operation.name"] == "execute_tool"
    assert (t["gen_ai.tool.name"], t["gen_ai.tool.call.id"]) == ("lookup", "call_1")
    assert "gen_ai.tool.call.arguments" not in t  # content is off by default
    assert tool.status.status_code is StatusCode.UNSET
    assert tuple(attrs(below[0])["gen_ai.response.finish_reasons"]) == ("tool_call",)
    assert {context_of(s).trace_id for s in telemetry.spans()} == {context_of(agent).trace_id}


async def test_a_failed_tool_span_names_the_error_its_result_names(telemetry: Telemetry) -> None:
    # docs/observability.md: gen_ai.tool.type = function; a tool that failed has error.type =
    # the error class its result names, else tool_error (arguments the model got wrong)
    def broken(city: str) -> str:
        """Fail."""
        raise ValueError(city)

    script = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "c1", "name": "broken", "input": {"city": "x"}},
                                {"id": "c2", "name": "lookup", "input": {"town": "x"}},
                                {"id": "c3", "name": "lookup", "input": {"city": "Oslo"}}]},
                {"text": "done"},
            ]
        }
    }  # fmt: skip
    await run(telemetry, script, tools=[broken, lookup])
    spans = {attrs(s)["gen_ai.tool.call.id"]: s for s in telemetry.named("execute_tool")}
    assert {call: attrs(s)["gen_ai.tool.type"] for call, s in spans.items()} == dict.fromkeys(
        ("c1", "c2", "c3"), "function"
    )
    assert [attrs(spans[c]).get("error.type") for c in ("c1", "c2", "c3")] == [
        "ValueError",
        "tool_error",
        None,
    ]
    assert [spans[c].status.status_code for c in ("c1", "c2", "c3")] == [
        StatusCode.ERROR,
        StatusCode.ERROR,
        StatusCode.UNSET,
    ]


async def test_a_tool_span_is_current_while_the_tool_runs(telemetry: Telemetry) -> None:
    from opentelemetry import trace

    seen: list[Any] = []

    def probe(city: str) -> str:
        """Record the current span."""
        seen.append(trace.get_current_span().get_span_context().span_id)
        return city

    script = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "c1", "name": "probe", "input": {"city": "x"}}]},
                {"text": "done"},
            ]
        }
    }
    await run(telemetry, script, tools=[probe])
    tool = the(telemetry.named("execute_tool"))
    assert seen == [tool.context.span_id]


# ----------------------------------------------------------------------------- content


async def test_content_is_off_by_default(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    await run(telemetry, {"models": {"*": [{"text": "PRIVATE-REPLY"}]}}, prompt="PRIVATE-PROMPT",
              system="PRIVATE-SYSTEM")  # fmt: skip
    chat = the(telemetry.named("chat "))
    for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"):
        assert key not in attrs(chat)
    assert telemetry.logs() == []
    for text in ("PRIVATE-REPLY", "PRIVATE-PROMPT", "PRIVATE-SYSTEM"):
        assert_secret_absent(telemetry, text)


async def test_span_only_content(telemetry: Telemetry) -> None:
    await run(
        telemetry,
        {"models": {"*": [{"text": "the reply"}]}},
        prompt="the prompt",
        system="be brief",
        observer_kwargs={"capture_content": "SPAN_ONLY"},
    )
    c = attrs(the(telemetry.named("chat ")))
    assert json.loads(c["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "the prompt"}]}
    ]
    assert json.loads(c["gen_ai.system_instructions"]) == [{"type": "text", "content": "be brief"}]
    assert json.loads(c["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "the reply"}
    ]
    assert telemetry.logs() == []


async def test_event_only_content_from_the_environment(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "event_only")
    await run(telemetry, {"models": {"*": [{"text": "the reply", "usage": USAGE}]}},
              prompt="the prompt", system="be brief")  # fmt: skip
    chat = the(telemetry.named("chat "))
    assert "gen_ai.input.messages" not in attrs(chat)
    assert "gen_ai.output.messages" not in attrs(chat)
    (record,) = telemetry.logs()
    assert record.event_name == "gen_ai.client.inference.operation.details"
    details = dict(record.attributes or {})
    # on events the conventions ask for the structured form (on spans, JSON text): it was
    # the span's JSON string here too
    (prompt,) = details["gen_ai.input.messages"]
    assert prompt["role"] == "user"
    assert [dict(part) for part in prompt["parts"]] == [{"type": "text", "content": "the prompt"}]
    (reply,) = details["gen_ai.output.messages"]
    assert reply["finish_reason"] == "end_turn"
    assert reply["parts"][0] == {"type": "text", "content": "the reply"}
    assert details["gen_ai.system_instructions"] == ({"type": "text", "content": "be brief"},)
    assert details["gen_ai.request.model"] == "primary"
    assert details["gen_ai.usage.output_tokens"] == 3
    # the record belongs to the chat span
    assert record.span_id == chat.context.span_id and record.trace_id == chat.context.trace_id


async def test_tool_content_is_captured_when_asked(telemetry: Telemetry) -> None:
    script = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "call_1", "name": "lookup", "input": {"city": "Oslo"}}]},
                {"text": "done"},
            ]
        }
    }
    await run(telemetry, script, tools=[lookup], observer_kwargs={"capture_content": True})
    t = attrs(the(telemetry.named("execute_tool")))
    assert json.loads(t["gen_ai.tool.call.arguments"]) == {"city": "Oslo"}
    assert t["gen_ai.tool.call.result"] == "Oslo: sunny"
    second = sorted(telemetry.named("chat "), key=lambda s: s.start_time or 0)[1]
    messages = json.loads(attrs(second)["gen_ai.input.messages"])
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[2]["parts"] == [
        {"type": "tool_call_response", "id": "call_1", "response": "Oslo: sunny"}
    ]
    assert messages[1]["parts"] == [
        {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"city": "Oslo"}}
    ]


# ----------------------------------------------------------------------------- cancel, dispose


SLOW = {"models": {"*": [{"text": "x" * 40, "chunk_chars": 1, "delay_ms": 20, "usage": USAGE}]}}


def assert_all_ended_as_cancelled(telemetry: Telemetry) -> None:
    chat = the(telemetry.named("chat "))
    assert attrs(chat)["error.type"] == "cancelled"
    assert chat.status.status_code is StatusCode.ERROR
    (attempt,) = telemetry.children(chat)
    assert attrs(attempt)["error.type"] == "cancelled"
    agent = the(telemetry.named("invoke_agent"))
    assert attrs(agent)["error.type"] == "cancelled"
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "cancelled"


async def test_cancel_mid_stream_ends_every_span(telemetry: Telemetry) -> None:
    observer = telemetry.observer()
    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("primary", api_key=SECRET, base_url=fake.base_url) as client,
    ):
        engine: TurnEngine

        def stop_on_first(_: str) -> None:
            engine.cancel()

        engine = TurnEngine(client, observers=[observer], text_streamer=stop_on_first)
        with pytest.raises(Cancelled):
            await engine.run("hi")
    assert observer.open_turns == 0
    assert_all_ended_as_cancelled(telemetry)


async def test_a_task_cancelled_mid_stream_disposes_and_ends_every_span(
    telemetry: Telemetry,
) -> None:
    observer = telemetry.observer()
    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("primary", api_key=SECRET, base_url=fake.base_url) as client,
    ):
        task: asyncio.Task[Any]

        def cancel_task(_: str) -> None:
            asyncio.get_running_loop().call_soon(task.cancel)

        engine = TurnEngine(client, observers=[observer], text_streamer=cancel_task)
        task = asyncio.ensure_future(engine.run("hi"))
        with pytest.raises(asyncio.CancelledError):
            await task
    assert observer.open_turns == 0
    assert_all_ended_as_cancelled(telemetry)


async def test_a_cancel_during_a_tool_ends_the_tool_span(telemetry: Telemetry) -> None:
    engine: TurnEngine

    async def hang(city: str) -> str:
        """Never answers."""
        engine.cancel()
        await asyncio.sleep(30)
        return city

    script = {
        "models": {"*": [{"tool_calls": [{"id": "c1", "name": "hang", "input": {"city": "x"}}]}]}
    }
    observer = telemetry.observer()
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("primary", api_key=SECRET, base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer], tools=[hang])
        with pytest.raises(Cancelled):
            await engine.run("hi")
    tool = the(telemetry.named("execute_tool"))
    assert attrs(tool)["error.type"] == "cancelled"
    assert attrs(the(telemetry.named("invoke_agent")))["error.type"] == "cancelled"
    # the run's context is restored: nothing of ours is current any more
    from opentelemetry import trace

    assert not trace.get_current_span().get_span_context().is_valid


# ----------------------------------------------------------------------------- concurrency


async def test_200_concurrent_turns_never_cross_parent(telemetry: Telemetry) -> None:
    count = 200
    models: dict[str, Any] = {}
    for i in range(count):
        reply = {"text": f"reply {i}", "chunk_chars": 3, "usage": USAGE}
        models[f"m{i}"] = [{"status": 529, "retry_after": 0.01}, reply] if i % 3 == 0 else [reply]
    observer = telemetry.observer()
    async with (
        FakeProvider({"models": models}) as fake,
        OpenAIClient("m0", api_key=SECRET, base_url=fake.openai_base_url) as client,
    ):
        engines = [
            TurnEngine(
                client,
                observers=[observer],
                handler=StreamHandler.default(),
                request_options=RequestOptions(model=f"m{i}"),
            )
            for i in range(count)
        ]
        results = await asyncio.gather(*(e.run(f"prompt {i}") for i, e in enumerate(engines)))
    assert [r.text for r in results] == [f"reply {i}" for i in range(count)]
    assert observer.open_turns == 0

    spans = telemetry.spans()
    by_id = {context_of(s).span_id: s for s in spans}
    agents = [s for s in spans if s.name == "invoke_agent rxturn"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    attempts = [s for s in spans if s.name == "rxturn.attempt"]
    assert (len(agents), len(chats)) == (count, count)
    assert len(attempts) == count + len(range(0, count, 3))
    assert len({context_of(s).trace_id for s in agents}) == count  # one trace per run
    for chat in chats:
        assert chat.parent is not None
        agent = by_id[chat.parent.span_id]
        assert agent.name == "invoke_agent rxturn"
        assert context_of(agent).trace_id == context_of(chat).trace_id
    children: dict[int, list[Any]] = {}
    for attempt in attempts:
        assert attempt.parent is not None
        parent = by_id[attempt.parent.span_id]
        # an attempt hangs under the chat span of its own turn: same model, same trace
        assert parent.name == f"chat {attrs(attempt)['gen_ai.request.model']}"
        assert context_of(parent).trace_id == context_of(attempt).trace_id
        children.setdefault(context_of(parent).span_id, []).append(attempt)
    for chat in chats:
        index = int(attrs(chat)["gen_ai.request.model"][1:])
        assert len(children[context_of(chat).span_id]) == (2 if index % 3 == 0 else 1)
    assert sum(p.count for p in telemetry.points("gen_ai.client.operation.duration")) == count
    assert_secret_absent(telemetry, SECRET)


# ----------------------------------------------------------------------------- cache and cost


async def test_cache_reasoning_and_cost_attributes(telemetry: Telemetry) -> None:
    """The conventions' cache and reasoning counts on the chat and attempt spans (the provider
    reported them), and ``rxturn.cost.usd``: genai-prices' figure for the turn."""
    import genai_prices

    raw = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 30000,
        "output_tokens": 50,
        "output_tokens_details": {"thinking_tokens": 20},
    }
    script = {"models": {"*": [{"text": "cached", "raw_usage": raw}]}}
    result, _ = await run(telemetry, script, model="claude-sonnet-4-5")
    chat = the(telemetry.named("chat "))
    (attempt,) = telemetry.children(chat)
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=32100,
            output_tokens=50,
            cache_read_tokens=30000,
            cache_write_tokens=2000,
            output_reasoning_tokens=20,
        ),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    ).total_price
    for span in (chat, attempt):
        a = attrs(span)
        assert a["gen_ai.usage.input_tokens"] == 32100  # the total: uncached + writes + reads
        assert a["gen_ai.usage.cache_read.input_tokens"] == 30000
        assert a["gen_ai.usage.cache_creation.input_tokens"] == 2000
        assert a["gen_ai.usage.reasoning.output_tokens"] == 20
        assert a["rxturn.cost.usd"] == float(expected)
    assert attrs(chat)["rxturn.cost.unpriced_attempts"] == 0
    assert result.cost is not None and result.cost.total == expected


async def test_no_cache_attributes_when_none_were_reported(telemetry: Telemetry) -> None:
    script = {
        "models": {"*": [{"text": "hi", "raw_usage": {"input_tokens": 5, "output_tokens": 1}}]}
    }
    await run(telemetry, script)
    a = attrs(the(telemetry.named("chat ")))
    assert a["gen_ai.usage.input_tokens"] == 5
    assert not any("cache" in key or "reasoning" in key for key in a)
    # model "primary" is unknown to genai-prices: unpriced, a cost of 0 with one attempt counted
    assert a["rxturn.cost.usd"] == 0.0 and a["rxturn.cost.unpriced_attempts"] == 1


async def test_no_api_key_in_anything_exported_walked_by_assert_no_secret(
    telemetry: Telemetry,
) -> None:
    """rxturn.testing.assert_no_secret over the SDK's own objects (spans with their events and
    status, log records, metric points): a failover, a tool call and content on spans and
    events, and the key is nowhere. The walk reaches what it must: the failover event's
    attribute (in the span's BoundedList of events) and the prompt in both content records."""
    from rxturn.testing import assert_no_secret, find_secret

    def lookup(city: str) -> str:
        return f"sunny in {city}"

    script = {
        "models": {
            "primary": [{"status": 404, "error_type": "not_found_error"}],
            "backup": [
                {"tool_calls": [{"id": "t1", "name": "lookup", "input": {"city": "Oslo"}}]},
                {"text": "It is sunny.", "usage": USAGE},
            ],
        }
    }
    await run(
        telemetry,
        script,
        prompt="Weather in Oslo-PROMPT-MARK?",
        observer_kwargs={"capture_content": "SPAN_AND_EVENT"},
        fallback=FallbackManager("primary", ["backup"]),
        failover=True,
        tools=[lookup],
    )
    exported = {
        "spans": telemetry.spans(),
        "logs": telemetry.logs(),
        "metrics": telemetry.metric_reader.get_metrics_data(),
    }
    assert_no_secret(exported, SECRET, name="exported")
    found = find_secret(exported, "Oslo-PROMPT-MARK", name="exported")
    assert any(p.startswith("exported['spans']") for p in found)
    assert any(p.startswith("exported['logs']") for p in found)
    to_model = find_secret(exported["spans"], "backup", name="spans")
    assert any("._events[0]._attributes['rxturn.to_model']" in p for p in to_model), to_model


async def test_thinking_is_a_reasoning_part_without_its_signature(telemetry: Telemetry) -> None:
    """Kept thinking (an agent loop with extended thinking) is the conventions' ``reasoning``
    part with its text; it was exported as ``{"type": "thinking"}`` with no content at all, and
    redacted thinking as ``{"type": "redactedthinking"}``."""
    script = {"models": {"*": [{"thinking": "Let me weigh it.", "text": "Yes.", "usage": USAGE}]}}
    result, _ = await run(
        telemetry,
        script,
        observer_kwargs={"capture_content": "SPAN_ONLY"},
        keep_thinking=True,
    )
    (thinking, *_) = [p for p in result.message.content if type(p).__name__ == "ThinkingPart"]
    chat = the(telemetry.named("chat "))
    output = json.loads(attrs(chat)["gen_ai.output.messages"])
    assert output[0]["parts"] == [
        {"type": "reasoning", "content": "Let me weigh it."},
        {"type": "text", "content": "Yes."},
    ]
    signature = getattr(thinking, "signature", None)
    assert signature, "the fake provider signs thinking: the check below would be vacuous"
    assert_secret_absent(telemetry, signature)


def test_parts_beyond_the_conventions_keep_their_message_json_names() -> None:
    from rxturn.messages import Message, RedactedThinkingPart, RefusalPart
    from rxturn.otel._content import output_messages

    message = Message(
        role="assistant",
        content=(RedactedThinkingPart("ENCRYPTED-BLOB"), RefusalPart("I can't help with that.")),
    )
    assert output_messages(message, "refusal")[0]["parts"] == [
        {"type": "redacted_thinking"},  # its encrypted data is nobody's content: left out
        {"type": "refusal", "content": "I can't help with that."},
    ]
