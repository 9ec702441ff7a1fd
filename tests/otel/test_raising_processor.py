"""A span or log record processor that raises (a user's, or a broken exporter's): the
observer's callback fails, and the engine reports that, but every span still ends, what the
observer put in the run's context is taken out again and the turn's metric points are still
recorded."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import StatusCode

from rxturn import AnthropicClient, TurnEngine
from rxturn.testing import FakeProvider

from .conftest import Telemetry, context_of


class RaisingOnEnd(SpanProcessor):
    def __init__(self) -> None:
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        self.ended += 1
        raise RuntimeError("exporter down")


USAGE = {"input_tokens": 5, "output_tokens": 2}


class RaisingOnEmit(LogRecordProcessor):
    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        raise RuntimeError("log exporter down")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


async def test_a_processor_raising_on_end_leaves_no_span_current(telemetry: Telemetry) -> None:
    raising = RaisingOnEnd()
    telemetry.tracer_provider.add_span_processor(raising)  # after the in-memory exporter
    script: dict[str, Any] = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "c1", "name": "lookup", "input": {"city": "Oslo"}}],
                 "usage": USAGE},
                {"text": "Sunny.", "usage": USAGE},
                {"text": "Again.", "usage": USAGE},
            ]
        }
    }  # fmt: skip
    observer = telemetry.observer()
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("primary", api_key="sk-ant-x", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer], tools=[lookup])
        assert (await engine.run("weather?")).text == "Sunny."
        assert not trace.get_current_span().get_span_context().is_valid
        assert (await engine.run("and now?")).text == "Again."
        assert not trace.get_current_span().get_span_context().is_valid
    assert observer.open_turns == 0
    assert raising.ended == len(telemetry.spans()) > 0  # every span ended, each raising

    first, second = sorted(telemetry.named("invoke_agent"), key=lambda s: s.start_time or 0)
    assert second.parent is None  # not a child of the first run's span
    assert context_of(second).trace_id != context_of(first).trace_id
    # the turn after the tool belongs to the run, not to the tool's span
    below = telemetry.children(first)
    assert [s.name for s in below] == ["chat primary", "execute_tool lookup", "chat primary"]
    assert [s.name for s in telemetry.children(second)] == ["chat primary"]
    # one duration point per turn, and every turn's reported usage counted
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.count == 3
    tokens = {
        p.attributes["gen_ai.token.type"]: p.sum
        for p in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 3 * 5, "output": 3 * 2}


async def test_a_log_processor_raising_on_emit_still_ends_the_chat_span(
    telemetry: Telemetry,
) -> None:
    telemetry.logger_provider.add_log_record_processor(RaisingOnEmit())
    observer = telemetry.observer(capture_content="EVENT_ONLY")
    async with (
        FakeProvider({"models": {"*": [{"text": "Hi.", "usage": USAGE}]}}) as fake,
        AnthropicClient("primary", api_key="sk-ant-x", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer])
        assert (await engine.run("hello")).text == "Hi."
    assert observer.open_turns == 0
    (chat,) = telemetry.named("chat ")
    assert chat.name == "chat primary" and chat.status.status_code is StatusCode.UNSET
    assert chat.end_time is not None
    (duration,) = telemetry.points("gen_ai.client.operation.duration")
    assert duration.count == 1
    assert {
        p.attributes["gen_ai.token.type"] for p in telemetry.points("gen_ai.client.token.usage")
    } == {"input", "output"}
