"""The ``chat --json`` objects, decoded strictly (no unknown key anywhere) into types written
from the documented shapes: the served form ``{"message", "model", "attempts", "rescued",
"cost", "turns"}``, the failed form ``{"error": {"type", "message"}, "turns"}``, the Message
JSON with its parts and usage, and the audit's turns and attempts — on every wire, streaming and
not. A key renamed, dropped, added or given another type fails here.

In-process: the command's ``main`` against a fake provider on a thread of its own."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import msgspec
import pytest

from rxturn.cli import main
from rxturn.testing import FakeProvider

from ._support import ThreadedFake

Count = Annotated[int, msgspec.Meta(ge=0)]


class Usage(msgspec.Struct, forbid_unknown_fields=True):
    input_tokens: Count
    output_tokens: Count
    cache_read_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    cache_write_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    cache_write_5m_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    cache_write_1h_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    output_reasoning_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    input_audio_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    output_audio_tokens: Count | msgspec.UnsetType = msgspec.UNSET
    details: dict[str, int] | msgspec.UnsetType = msgspec.UNSET


class Text(msgspec.Struct, tag="text", forbid_unknown_fields=True):
    text: str


class ToolCall(msgspec.Struct, tag="tool_call", forbid_unknown_fields=True):
    id: str
    name: str
    input: dict[str, object]


class Thinking(msgspec.Struct, tag="thinking", forbid_unknown_fields=True):
    thinking: str
    signature: str | None
    id: str | msgspec.UnsetType = msgspec.UNSET


Part = Text | ToolCall | Thinking
StopReason = Literal["end_turn", "tool_call", "max_tokens", "stop_sequence", "refusal"]


class Message(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    model: str
    role: Literal["assistant"]
    content: list[Part]
    stop_reason: StopReason
    usage: Usage | None


class Cost(msgspec.Struct, forbid_unknown_fields=True):
    total: str
    unpriced_attempts: Count
    currency: Literal["USD"]


class Attempt(msgspec.Struct, forbid_unknown_fields=True):
    model: str
    kind: Literal["stream", "rescue", "create"]
    outcome: str
    usage: Usage | None
    started: float
    ended: float
    cost: str | None
    estimated_usage: Usage | None


class Turn(msgspec.Struct, forbid_unknown_fields=True):
    turn: Count
    input: str
    output: str
    tool_calls: list[ToolCall]
    input_tokens: Count
    output_tokens: Count
    model: str
    attempts: Count
    rescued: bool
    stop_reason: StopReason | None
    discarded_usage: Usage | None
    attempt_log: list[Attempt]
    billed_usage: Usage | None
    error: str | None
    cost: Cost | None


class Served(msgspec.Struct, forbid_unknown_fields=True):
    message: Message
    model: str
    attempts: Annotated[int, msgspec.Meta(ge=1)]
    rescued: bool
    cost: Cost | None
    turns: list[Turn]


class Error(msgspec.Struct, forbid_unknown_fields=True):
    type: str
    message: str


class Failed(msgspec.Struct, forbid_unknown_fields=True):
    error: Error
    turns: list[Turn]


PROVIDERS = ["anthropic", "openai", "openai-responses", "ollama"]
SERVED = {
    "models": {
        "m": [
            {
                "thinking": "hmm",
                "text": "Hi there",
                "usage": {"input_tokens": 4, "output_tokens": 2},
            }
        ],
        "quiet": [{"text": "no counts", "usage": None}],
        "flaky": [{"status": 529, "retry_after": 0}, {"text": "second try"}],
    }
}


def _run(
    capsys: pytest.CaptureFixture[str], provider: str, fake: FakeProvider, *args: str
) -> tuple[int, list[str]]:
    base = fake.base_url if provider in ("anthropic", "ollama") else fake.openai_base_url
    code = main(["chat", "--provider", provider, "--base-url", base, "--json", *args])
    out, err = capsys.readouterr()
    assert out.endswith("\n") and "" not in err.splitlines()
    return code, out.splitlines()


@pytest.mark.parametrize("stream", [[], ["--no-stream"]], ids=["stream", "no-stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_served_turns_decode_strictly(
    provider: str, stream: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadedFake(SERVED) as fake:
        # a non-streaming turn makes one request: no retry for "flaky" there
        models = ["m", "quiet", "flaky"][: 2 if stream else 3]
        results = [_run(capsys, provider, fake, "--model", m, *stream, "hi") for m in models]
    for code, lines in results:
        assert code == 0 and len(lines) == 1
        record = msgspec.json.decode(lines[0], type=Served)
        (turn,) = record.turns
        assert turn.error is None and turn.attempt_log[-1].outcome == "served"
        assert record.model == record.message.model == turn.model
    quiet = msgspec.json.decode(results[1][1][0], type=Served)
    assert quiet.message.usage is None and quiet.turns[0].billed_usage is None
    assert json.loads(results[1][1][0])["message"]["usage"] is None  # null, not absent
    if stream:  # --no-stream
        return
    flaky = msgspec.json.decode(results[2][1][0], type=Served)
    assert (flaky.attempts, flaky.rescued) == (2, False)
    outcomes = [(a.kind, a.outcome) for a in flaky.turns[0].attempt_log]
    assert outcomes == [("stream", "OverloadedError"), ("stream", "served")]
    if stream:  # --no-stream
        return
    flaky = msgspec.json.decode(results[2][1][0], type=Served)
    assert (flaky.attempts, flaky.rescued) == (2, False)
    outcomes = [(a.kind, a.outcome) for a in flaky.turns[0].attempt_log]
    assert outcomes == [("stream", "OverloadedError"), ("stream", "served")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failed_turn_decodes_strictly(provider: str, capsys: pytest.CaptureFixture[str]) -> None:
    with ThreadedFake({"models": {"*": [{"status": 400, "error_message": "no"}]}}) as fake:
        code, lines = _run(capsys, provider, fake, "--model", "m", "hi")
    assert code == 1 and len(lines) == 1
    record = msgspec.json.decode(lines[0], type=Failed)
    (turn,) = record.turns
    assert record.error.type == "BadRequestError" == turn.error
    assert (turn.output, turn.output_tokens) == ("", 0)
