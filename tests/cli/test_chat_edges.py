"""``rxturn chat`` at its edges: a failed turn's audit in ``--json``, the full URL of a wrong
base path, Ctrl-C on a terminal, ``--thinking`` on a terminal and on a pipe, and every command
piped into a reader that leaves early.

Everything runs the real console script against ``rxturn fake-server`` on 127.0.0.1 (or a
closed port); terminals are pseudo-terminals.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import (
    RXTURN,
    SGR,
    TIMEOUT,
    clean_env,
    closed_port,
    fake_server,
    run,
    run_tty,
    screen,
)

pytestmark = pytest.mark.slow  # subprocesses: the rxturn command, worker processes

THOUGHT = "Two and two make four; say it plainly."
SCENARIO = {
    "models": {
        "fail": [{"status": 400, "error_message": "no such thing"}],
        "think": [{"thinking": THOUGHT, "text": "Four."}],
        "slow": [
            {
                "text": "one two three four five six seven eight nine ten",
                "chunk_chars": 4,
                "delay_ms": 150,
            }
        ],
        "*": [{"text": "ok"}],
    }
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("edges")) as base:
        yield base


def chat(url: str, model: str, *extra: str) -> list[str]:
    return ["chat", "--provider", "anthropic", "--base-url", url, "--model", model, *extra]


# -- --json: a failed turn carries its audit -----------------------------------------------------


def test_json_failed_turn_carries_its_audit(url: str) -> None:
    result = run(*chat(url, "fail", "--json", "hi"))
    assert result.returncode == 1
    (line,) = result.stdout.splitlines()
    record = json.loads(line)
    assert record["error"]["type"] == "BadRequestError"
    assert record["error"]["message"].startswith("HTTP 400: ")
    assert record["error"]["message"].endswith("no such thing")
    (turn,) = record["turns"]
    assert turn["error"] == "BadRequestError"
    assert turn["model"] == "fail"
    assert turn["attempts"] >= 1
    assert [entry["outcome"] for entry in turn["attempt_log"]][-1] == "BadRequestError"


def test_json_failed_turn_in_the_interactive_chat_too(url: str) -> None:
    result = run(*chat(url, "fail", "--json"), stdin="hi\n")
    assert result.returncode == 0  # the chat goes on, and EOF ends it
    record = json.loads(result.stdout.splitlines()[0])
    assert set(record) == {"error", "turns"}
    assert record["turns"][0]["input"] == "hi"


# -- a wrong base path names the full URL requested -------------------------------------------


@pytest.mark.parametrize(
    ("provider", "path"),
    [
        ("anthropic", "/wrong/v1/messages"),
        ("openai", "/wrong/chat/completions"),
        ("openai-responses", "/wrong/responses"),
        ("ollama", "/wrong/api/chat"),
    ],
)
def test_a_wrong_base_path_names_the_full_url(url: str, provider: str, path: str) -> None:
    args = ["chat", "--provider", provider, "--base-url", url + "/wrong", "--model", "m", "hi"]
    result = run(*args)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("rxturn chat: error: HTTP 404")
    assert url + path in line
    assert result.stdout == ""


def test_a_key_pasted_into_the_base_path_is_not_named_with_the_url(url: str) -> None:
    secret = "plugh-path-SECRET-0123456789"
    args = ["chat", "--provider", "anthropic", "--base-url", f"{url}/{secret}", "--model", "m"]
    result = run(*args, "hi", env=clean_env(ANTHROPIC_API_KEY=secret))
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert f"{url}/[redacted]/v1/messages" in line
    assert secret not in result.stderr + result.stdout


# -- Ctrl-C on a terminal keeps what was served, marked -----------------------------------------


def test_ctrl_c_on_a_terminal_keeps_the_text_and_marks_it(url: str) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*RXTURN, *chat(url, "slow", "hi")],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=clean_env(TERM="xterm-256color"),
    )
    os.close(slave)
    raw = b""
    interrupted = False
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                raw += data
            if not interrupted and b"two" in raw:
                proc.send_signal(signal.SIGINT)  # what Ctrl-C on the terminal sends
                interrupted = True
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert interrupted
    assert code == 130
    text = raw.decode()
    lines = [line for line in screen(text) if line]
    shown = next(line for line in lines if line.startswith("one two"))
    assert shown.endswith("[cancelled]")
    assert "ten" not in shown  # it was cut
    assert "\x1b[2m[cancelled]" in text  # dimmed
    assert "Traceback" not in text


# -- --thinking: dimmed on a terminal, never on a pipe ---------------------------------------


def test_thinking_shows_dimmed_on_a_terminal(url: str) -> None:
    result = run_tty(*chat(url, "think", "--thinking", "2048", "hi"))
    assert result.returncode == 0, result.err
    assert f"\x1b[2m{THOUGHT[:4]}" in result.out  # dim
    lines = [line for line in screen(result.out) if line]
    assert lines == [THOUGHT, "Four."]


def test_thinking_with_no_color_is_marked(url: str) -> None:
    env = clean_env(TERM="xterm-256color", NO_COLOR="1")
    result = run_tty(*chat(url, "think", "--thinking", "2048", "hi"), env=env)
    assert result.returncode == 0, result.err
    assert not SGR.search(result.out)
    assert [line for line in screen(result.out) if line] == [f"[thinking] {THOUGHT}", "Four."]


def test_thinking_never_reaches_a_piped_stdout(url: str) -> None:
    result = run(*chat(url, "think", "--thinking", "2048", "hi"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Four.\n"
    assert THOUGHT not in result.stderr


# -- every command into a reader that leaves, and the classic mistakes -------------------------


def _piped(command: list[str], reader: list[str]) -> tuple[int, str, bytes]:
    """``rxturn COMMAND | READER``: rxturn's exit code and stderr, and what the reader printed."""
    producer = subprocess.Popen(
        [*RXTURN, *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    assert producer.stdout is not None and producer.stderr is not None
    consumer = subprocess.run(
        reader, stdin=producer.stdout, capture_output=True, timeout=TIMEOUT, check=False
    )
    producer.stdout.close()
    err = producer.stderr.read().decode()
    producer.stderr.close()
    return producer.wait(timeout=TIMEOUT), err, consumer.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic"
    return next(iter(sorted(fixtures.glob("*.sse"))))


@pytest.mark.parametrize("reader", [["cat"], ["head", "-1"]], ids=["cat", "head"])
def test_every_command_into_a_pipe(url: str, recorded: Path, reader: list[str]) -> None:
    commands = [
        ["demo"],
        ["replay", str(recorded)],
        ["replay", "--json", str(recorded)],
        chat(url, "m", "hi"),
        chat(url, "m", "--json", "hi"),
        ["--help"],
        ["chat", "--help"],
    ]
    for command in commands:
        code, err, out = _piped(command, reader)
        assert code in (0, 141), (command, code, err)
        assert "Traceback" not in err, command
        assert out, command


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--base-url", "http://127.0.0.1:{port}", "hi"], 1, "http://127.0.0.1:{port}/v1/messages"),
        (["--base-url", "{url}/nope", "hi"], 1, "{url}/nope/v1/messages"),
        (["--base-url", "{url}", ""], 2, "the prompt is empty"),
        (["--base-url", "{url}", "   "], 2, "the prompt is empty"),
        (["--base-url", "not a url", "hi"], 2, "--base-url 'not a url' holds a space"),
        (["hi"], 2, "ANTHROPIC_API_KEY is not set"),
    ],
    ids=["closed-port", "wrong-path", "empty", "blank", "bad-url", "no-key"],
)
def test_mistakes_are_one_line_errors(url: str, args: list[str], code: int, says: str) -> None:
    port = closed_port()
    filled = [a.format(port=port, url=url) for a in args]
    for reader in (["cat"], ["head", "-1"]):
        exit_code, err, out = _piped(
            ["chat", "--provider", "anthropic", "--model", "m", *filled], reader
        )
        assert exit_code == code, err
        errors = [line for line in err.splitlines() if not line.startswith("[")]  # notices
        assert len(errors) == 1, err
        assert errors[0].startswith("rxturn chat: error: ")
        assert says.format(port=port, url=url) in errors[0]
        assert "Traceback" not in err
        assert out == b""
