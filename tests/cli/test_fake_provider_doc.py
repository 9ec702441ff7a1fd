"""docs/fake-provider.md tells the truth: every entry key, every example, the assertion recipe.

Each scenario example of the document is loaded, and the outcome the text claims for it is
checked by running it through the engine against the real fake provider on loopback.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rxturn import AnthropicClient, FallbackManager, StreamHandler, TimeoutPolicy, TurnEngine
from rxturn.errors import (
    AuthenticationError,
    ConfigError,
    ContextOverflowError,
    RescueFailed,
)
from rxturn.messages import StopReason
from rxturn.testing import Entry, FakeProvider, load_scenario

from ._support import clean_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "fake-provider.md"
_EXAMPLE = re.compile(r"^\*\*(?P<title>[^*]+)\*\*.*?^```json\n(?P<json>.*?)^```", re.S | re.M)


def _examples() -> dict[str, dict[str, Any]]:
    found = {m["title"]: msgspec.json.decode(m["json"]) for m in _EXAMPLE.finditer(DOC.read_text())}
    assert len(found) >= 10
    return found


EXAMPLES = _examples()


def test_every_json_block_is_a_valid_scenario() -> None:
    blocks = re.findall(r"^```json\n(.*?)^```", DOC.read_text(), re.S | re.M)
    assert len(blocks) == len(EXAMPLES) + 1  # the examples and the shape example
    for block in blocks:
        load_scenario(block)


def test_the_key_table_lists_exactly_the_entry_keys() -> None:
    table = DOC.read_text().split("## Entry keys", 1)[1].split("Details worth knowing", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert sorted(documented) == sorted(Entry.__struct_fields__)


@pytest.mark.slow
def test_fake_server_help_points_at_the_document() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rxturn", "fake-server", "--help"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0
    assert "docs/fake-provider.md" in out.stdout
    assert "SPEC" not in out.stdout


@pytest.mark.slow
def test_the_assertion_recipe_runs() -> None:
    (code,) = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.S | re.M)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2 requests received, the same body twice"


async def _run(
    scenario: dict[str, Any],
    *,
    model: str = "claude-test",
    handler: StreamHandler | None = None,
    fallback: FallbackManager | None = None,
    tools: list[Any] | None = None,
    prompts: int = 1,
) -> tuple[list[Any], int]:
    """Run ``prompts`` prompts; each result or error, and the requests the server got."""
    outcomes: list[Any] = []
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient(model, api_key="offline", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            handler=handler or StreamHandler.default(),
            fallback=fallback,
            tools=tools or [],
        )
        for n in range(prompts):
            try:
                outcomes.append(await engine.run(f"prompt {n}"))
            except Exception as exc:
                outcomes.append(exc)
        return outcomes, len(fake.requests)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("title", "text", "attempts"),
    [
        ("Rate limited, then fine", "after the wait", 2),
        ("Overloaded", "the provider recovered", 2),
        ("A dropped stream", "a reply that arrives whole", 2),
        ("Slow but steady", "one word at a time", 1),
        ("Broken JSON", "clean", 2),
        ("An in-stream error event", "second try", 2),
    ],
)
async def test_a_fault_example_is_absorbed_as_documented(
    title: str, text: str, attempts: int
) -> None:
    ([result], requests) = await _run(EXAMPLES[title])
    assert result.text == text
    assert result.turns[-1].attempts == attempts
    assert requests == attempts


@pytest.mark.slow
async def test_a_permanent_error_fails_at_once() -> None:
    ([error], requests) = await _run(EXAMPLES["A permanent error"])
    assert isinstance(error, AuthenticationError)
    assert requests == 1  # never retried, never rescued


@pytest.mark.slow
async def test_a_scripted_error_text_is_recognised() -> None:
    ([error], _) = await _run(EXAMPLES["A scripted error text"])
    assert isinstance(error, ContextOverflowError)


@pytest.mark.slow
async def test_a_server_error_is_rescued_then_trips_the_breaker() -> None:
    outcomes, _ = await _run(
        EXAMPLES["A server error"],
        model="primary",
        fallback=FallbackManager("primary", ["backup"]),
        prompts=4,
    )
    assert [type(o) for o in outcomes[:3]] == [RescueFailed] * 3
    assert outcomes[3].text == "backup served"
    assert outcomes[3].turns[-1].model == "backup"


@pytest.mark.slow
async def test_a_stall_finishes_by_default_and_is_retried_with_a_short_idle_deadline() -> None:
    scenario = EXAMPLES["A stall"]
    ([patient], _) = await _run(scenario)
    assert (patient.text, patient.turns[-1].attempts) == ("slow going", 1)
    short = StreamHandler(timeouts=TimeoutPolicy(per_event=0.1, max_consecutive_timeouts=3))
    ([impatient], _) = await _run(scenario, handler=short)
    assert (impatient.text, impatient.turns[-1].attempts) == ("quick this time", 2)


@pytest.mark.slow
async def test_a_tool_call_then_the_answer() -> None:
    cities: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        cities.append(city)
        return "sunny"

    ([result], requests) = await _run(EXAMPLES["A tool call, then the answer"], tools=[get_weather])
    assert cities == ["Lisbon"]
    assert result.text == "It is sunny in Lisbon."
    assert requests == 2


@pytest.mark.slow
async def test_thinking_a_truncated_reply_no_usage() -> None:
    ([result], _) = await _run(EXAMPLES["Thinking, a truncated reply, no usage"])
    assert result.text == "Four."
    assert result.stop_reason is StopReason.MAX_TOKENS
    usage = result.message.usage
    assert usage is None or (usage.input_tokens, usage.output_tokens) == (0, 0)


def test_the_thinking_rule_is_documented_with_the_messages_the_fake_gives() -> None:
    # the fake refused such continuations with a 400 that the document, which says what a
    # request must look like, never mentioned
    from rxturn.testing._emit_base import anthropic_thinking_violation, thinking_signature

    text = " ".join(DOC.read_text().split())
    call = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    signed = {"type": "thinking", "thinking": "hm", "signature": thinking_signature("hm")}

    def violation(thinking: dict[str, Any], assistant: list[Any]) -> str | None:
        history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": assistant}]
        return anthropic_thinking_violation({"thinking": thinking, "messages": history})

    for thinking in ({"type": "enabled", "budget_tokens": 2048}, {"type": "adaptive"}):
        lost = violation(thinking, [call])
        assert lost is not None
        assert f"``{lost.split('. ', 1)[0]}.``" in text
        changed = violation(thinking, [{**signed, "signature": "other"}, call])
        assert f"``{changed}`` for a changed one" in text
        assert violation(thinking, [signed, call]) is None


def _loads(entry: dict[str, Any]) -> bool:
    try:
        load_scenario({"models": {"m": [entry]}})
    except ConfigError:
        return False
    return True


def test_the_keys_that_take_null_are_the_documented_ones() -> None:
    # null loaded for thirteen keys as if left out, and the document said nothing of it
    text = " ".join(DOC.read_text().split())
    sentence = text.split("- `null` is the same as leaving the key out for ", 1)[1]
    sentence = sentence.split("; `usage: null`", 1)[0]
    documented = set(re.findall(r"`(\w+)`", sentence))
    entry_keys = {key for key in Entry.__struct_fields__ if key != "usage"}
    assert {key for key in entry_keys if _loads({key: None})} == documented - {"id"}
    assert "id" in documented and _loads({"tool_calls": [{"name": "f", "id": None}]})
    assert not _loads({"tool_calls": [{"name": "f", "input": None}]})
    window = {"models": {"m": [{}]}, "rate_limit_windows": [{"seconds": 1, "retry_after": None}]}
    assert load_scenario(window).rate_limit_windows[0].retry_after is None


def test_the_string_keys_documented_non_empty_refuse_an_empty_string() -> None:
    table = DOC.read_text().split("## Entry keys", 1)[1].split("Details worth knowing", 1)[0]
    types = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", table, re.M))
    strings = {key: kind for key, kind in types.items() if kind.endswith("string")}
    assert {"text", "thinking", "error_type", "error_message"} <= set(strings)
    for key, kind in strings.items():
        # (error_type and error_message need a status to load at all)
        assert _loads({key: "", "status": 500} if key.startswith("error_") else {key: ""}) is (
            kind == "string"
        ), key
    assert not _loads({"tool_calls": [{"name": ""}]})
    assert not _loads({"tool_calls": [{"name": "f", "id": ""}]})
    with pytest.raises(ConfigError, match="non-empty strings"):
        load_scenario({"models": {"": [{}]}})
