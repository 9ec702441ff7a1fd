"""``rxturn chat --provider openai-responses`` and the reasoning options, as a user runs them:
real processes, the fake server over loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def fake_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path: Path = tmp_path_factory.mktemp("chat-responses") / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rxturn", "fake-server", "--scenario", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        yield first.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def chat(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rxturn", "chat", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env if env is not None else _env(),
    )


def requests_seen(fake_url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(fake_url + "/_fake/requests", timeout=10) as resp:
        return json.loads(resp.read())


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
    assert message["usage"] == {"input_tokens": 4, "output_tokens": 6}
    sent = [r for r in requests_seen(fake_url) if r.get("model") == "gpt-r"][-1]
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
    sent = [r for r in requests_seen(fake_url) if r.get("model") == "claude"][-1]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--provider", "openai", "--thinking", "2048"], "use reasoning_effort"),
        (["--provider", "anthropic", "--thinking", "100"], "--thinking must be at least 1024"),
        (["--provider", "anthropic", "--thinking", "9000"], "below max_tokens=8192"),
        (["--provider", "anthropic", "--reasoning-effort", "low"], "use thinking=<budget>"),
        (["--provider", "ollama", "--reasoning-effort", "minimal"], "Ollama's think takes"),
        (["--provider", "openai-responses", "--reasoning-effort", "max!"], "invalid choice"),
    ],
)
def test_a_knob_the_provider_cannot_take_is_a_bad_argument(
    fake_url: str, args: list[str], says: str
) -> None:
    before = len(requests_seen(fake_url))
    proc = chat(*args, "--model", "m", "--base-url", fake_url, "hello")
    assert proc.returncode == 2
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert len(requests_seen(fake_url)) == before  # nothing was sent


def test_missing_openai_key_for_the_real_responses_endpoint_exits_2() -> None:
    proc = chat("--provider", "openai-responses", "--model", "gpt-5", "hello")
    assert proc.returncode == 2
    assert "OPENAI_API_KEY is not set" in proc.stderr
