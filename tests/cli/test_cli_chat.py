"""``rxturn chat`` as a user runs it: real processes, the fake server over loopback."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import RXTURN, TIMEOUT, clean_env, fake_server, received, run

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

SECRET = "sk-ant-test-SECRET-0123456789"

SCENARIO = {
    "models": {
        "good": [
            {"text": "Hello from the fake.", "usage": {"input_tokens": 3, "output_tokens": 5}}
        ],
        "flaky": [{"status": 529, "retry_after": 0}, {"text": "after one retry"}],
        "bad": [{"status": 401}],
        "primary": [{"status": 500}],
        "backup": [{"text": "backup served"}],
        "truncated": [{"text": "partial partial", "chunk_chars": 3, "drop_after_events": 4}] * 4
        + [{"text": "rescued whole reply"}],
    }
}


@pytest.fixture(scope="module")
def fake_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("chat")) as url:
        yield url


def chat(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run("chat", *args, stdin=stdin, env=env)


def test_one_shot_json(fake_url: str) -> None:
    out = chat("--provider", "anthropic", "--base-url", fake_url, "--model", "good", "--json", "hi")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert set(record) == {"message", "model", "attempts", "rescued", "cost", "turns"}
    # "good" is no model genai-prices knows: the turn's one attempt is unpriced
    assert record["cost"] == {"total": "0", "unpriced_attempts": 1, "currency": "USD"}
    message = record["message"]
    assert set(message) == {"id", "model", "role", "content", "stop_reason", "usage"}
    assert message["content"] == [{"type": "text", "text": "Hello from the fake."}]
    assert message["stop_reason"] == "end_turn"
    # the scripted counts, and the cache counts Anthropic reports (zero: no cache here)
    assert message["usage"] == {
        "input_tokens": 3,
        "output_tokens": 5,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert record["model"] == "good"
    assert record["attempts"] == 1 and record["rescued"] is False
    assert len(record["turns"]) == 1
    assert record["turns"][0]["input"] == "hi"
    assert record["turns"][0]["output"] == "Hello from the fake."


def test_retry_is_counted_in_attempts(fake_url: str) -> None:
    out = chat("--provider", "openai", "--base-url", fake_url, "--model", "flaky", "--json", "hi")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["message"]["content"][0]["text"] == "after one retry"
    assert record["attempts"] == 2


def test_failing_provider_prints_error_json_and_exits_1(fake_url: str) -> None:
    out = chat("--provider", "anthropic", "--base-url", fake_url, "--model", "bad", "--json", "hi")
    assert out.returncode == 1
    record = json.loads(out.stdout)
    assert record["error"]["type"] == "AuthenticationError"
    assert "401" in record["error"]["message"]


def test_missing_key_for_the_real_endpoint_exits_2() -> None:
    out = chat("--provider", "anthropic", "--model", "m", "hi")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "ANTHROPIC_API_KEY" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_arguments_exit_2_without_traceback() -> None:
    out = chat("--provider", "nope", "--model", "m", "hi")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr


def test_plain_output_streams_text(fake_url: str) -> None:
    out = chat("--provider", "ollama", "--base-url", fake_url, "--model", "good", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from the fake."


def test_plain_output_without_streaming_prints_the_reply(fake_url: str) -> None:
    out = chat(
        "--provider", "anthropic", "--base-url", fake_url, "--model", "good", "--no-stream", "hi"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from the fake."


def test_plain_output_shows_a_rescued_reply(fake_url: str) -> None:
    out = chat("--provider", "anthropic", "--base-url", fake_url, "--model", "truncated", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "rescued whole reply"
    assert "[rescued by the non-streaming request]" in out.stderr


def test_interactive_chat_reads_lines_until_eof(fake_url: str) -> None:
    out = chat(
        "--provider",
        "anthropic",
        "--base-url",
        fake_url,
        "--model",
        "good",
        "--json",
        stdin="first\n/stats\n\nsecond\n",
    )
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.strip().splitlines()]
    assert len(records) == 2
    assert [r["turns"][0]["input"] for r in records] == ["first", "second"]
    assert "turns 1" in out.stderr  # /stats after the first turn


def test_interactive_failed_turn_reports_and_goes_on(fake_url: str) -> None:
    out = chat(
        "--provider",
        "anthropic",
        "--base-url",
        fake_url,
        "--model",
        "primary",
        "--fallback",
        "backup",
        "--no-failover",  # the breaker alone: failed turns report and the chat goes on
        "--json",
        stdin="a\nb\nc\nd\n",
    )
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.strip().splitlines()]
    assert [("error" in r) for r in records] == [True, True, True, False]
    assert records[3]["model"] == "backup"
    assert records[3]["message"]["content"][0]["text"] == "backup served"


def test_the_key_never_reaches_the_output(fake_url: str) -> None:
    env = clean_env(ANTHROPIC_API_KEY=SECRET)
    for model in ("good", "bad"):
        out = chat(
            "--provider",
            "anthropic",
            "--base-url",
            fake_url,
            "--model",
            model,
            "--json",
            "hi",
            env=env,
        )
        assert SECRET not in out.stdout and SECRET not in out.stderr


def test_ctrl_c_cancels_the_running_turn_not_the_chat(tmp_path: Path) -> None:
    import signal
    import time

    stall = {
        "models": {
            "slow": [
                {"text": "never finishes", "stall_after_events": 2},
                {"text": "second answer"},
            ],
        }
    }
    with fake_server(stall, tmp_path) as url:
        args = ("chat", "--provider", "anthropic", "--base-url", url, "--model", "slow", "--json")
        proc = subprocess.Popen(
            [*RXTURN, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("first\n")
        proc.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:  # bounded: wait until the turn reached the server
            if received(url):
                break
            time.sleep(0.1)
        # else the Ctrl-C below could come before the turn: the chat's start is slow on a
        # loaded machine (a batch run's took 14 s on two busy cores)
        assert received(url), f"the turn never reached the server in {TIMEOUT:.0f} s"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        first = json.loads(proc.stdout.readline())
        assert first["error"] == {"type": "Cancelled", "message": "cancelled by Ctrl-C"}
        assert [turn["error"] for turn in first["turns"]] == ["Cancelled"]  # its audit
        rest, err = proc.communicate("second\n", timeout=30)
        assert proc.returncode == 0, err
        second = json.loads(rest.strip().splitlines()[-1])
        assert second["message"]["content"][0]["text"] == "second answer"


def test_version_flag() -> None:
    from rxturn import __version__

    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"rxturn {__version__}"
