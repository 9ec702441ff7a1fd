"""``rxturn chat --provider openai-responses`` and the reasoning options, as a user runs them:
real processes, the fake server over loopback."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from ._support import fake_server, received, run

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

SCENARIO = {
    "models": {
        "gpt-r": [
            {
                "thinking": "Short answer.",
                "text": "Hello from Responses.",
                "usage": {"input_tokens": 4, "output_tokens": 6},
            }
        ],
        "refuser": [{"text": "I can't help with that.", "stop_reason": "refusal"}],
        "claude": [{"thinking": "Easy.", "text": "Hi."}],
    }
}


@pytest.fixture(scope="module")
def fake_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("chat-responses")) as url:
        yield url


def chat(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run("chat", *args, env=env)


def test_one_shot_json_over_responses(fake_url: str) -> None:
    proc = chat(
        "--provider",
        "openai-responses",
        "--model",
        "gpt-r",
        "--base-url",
        fake_url + "/v1",
        "--reasoning-effort",
        "low",
        "--json",
        "Say hello",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    message = out["message"]
    assert out["model"] == "gpt-r"
    assert [part["type"] for part in message["content"]] == ["thinking", "text"]
    assert message["content"][0]["thinking"] == "Short answer."
    assert message["content"][0]["id"].startswith("rs_")
    assert message["content"][1] == {"type": "text", "text": "Hello from Responses."}
    # the scripted counts, and what the fake's Responses wire adds: no cache hit, and one
    # reasoning token per thinking piece
    assert message["usage"] == {
        "input_tokens": 4,
        "output_tokens": 6,
        "cache_read_tokens": 0,
        "output_reasoning_tokens": 2,
    }
    sent = [r for r in received(fake_url) if r.get("model") == "gpt-r"][-1]
    assert sent["input"] == [{"role": "user", "content": "Say hello"}]
    assert sent["reasoning"] == {"effort": "low"}
    assert sent["include"] == ["reasoning.encrypted_content"]


def test_plain_text_and_refusal_over_responses(fake_url: str) -> None:
    proc = chat(
        "--provider",
        "openai-responses",
        "--model",
        "refuser",
        "--base-url",
        fake_url + "/v1",
        "--json",
        "Do something bad",
    )
    assert proc.returncode == 0, proc.stderr
    message = json.loads(proc.stdout)["message"]
    assert message["stop_reason"] == "refusal"
    assert message["content"] == [{"type": "refusal", "text": "I can't help with that."}]


def test_thinking_is_requested_from_anthropic(fake_url: str) -> None:
    proc = chat(
        "--provider",
        "anthropic",
        "--model",
        "claude",
        "--base-url",
        fake_url,
        "--thinking",
        "2048",
        "Hi",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hi.\n"
    sent = [r for r in received(fake_url) if r.get("model") == "claude"][-1]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--provider", "openai", "--thinking", "2048"], "(use --reasoning-effort)"),
        (["--provider", "anthropic", "--thinking", "100"], "--thinking must be at least 1024"),
        (["--provider", "anthropic", "--thinking", "9000"], "below the reply's max_tokens (8192"),
        (["--provider", "anthropic", "--reasoning-effort", "low"], "(use --thinking N)"),
        (["--provider", "ollama", "--reasoning-effort", "minimal"], "Ollama's think takes"),
        (["--provider", "openai-responses", "--reasoning-effort", "max!"], "invalid choice"),
    ],
)
def test_a_knob_the_provider_cannot_take_is_a_bad_argument(
    fake_url: str, args: list[str], says: str
) -> None:
    before = len(received(fake_url))
    proc = chat(*args, "--model", "m", "--base-url", fake_url, "hello")
    assert proc.returncode == 2
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert len(received(fake_url)) == before  # nothing was sent


def test_missing_openai_key_for_the_real_responses_endpoint_exits_2() -> None:
    proc = chat("--provider", "openai-responses", "--model", "gpt-5", "hello")
    assert proc.returncode == 2
    assert "OPENAI_API_KEY is not set" in proc.stderr
