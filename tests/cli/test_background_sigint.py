"""A command started with Ctrl-C ignored (a shell's background job: ``rxturn batch run … &``,
``nohup``) keeps it ignored for its whole life: the Ctrl-C typed at the terminal is the
foreground job's. The commands that stop their own way once running (the fake server, a chat
turn, a batch run) once took SIGINT back when their event loop started. SIGTERM still ends
each of them as before.

Each test sends SIGINT at a point it can observe (a request arrived, a line was read), then
something only a command still running can answer."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ._support import RXTURN, clean_env, fake_server, finish, records, until

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited across exec, as a shell does it


def _background(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*RXTURN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        preexec_fn=_ignore_sigint,
        **kwargs,
    )


def test_the_fake_server_serves_on_after_sigint(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"models": {"*": [{"text": "hi"}]}}))
    proc = _background(["fake-server", "--scenario", str(scenario)])
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip().removeprefix("listening on ")
        proc.send_signal(signal.SIGINT)
        # two round trips after the signal: a server that took it would have stopped
        assert records(url) == []
        assert records(url) == []
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        code, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert code == 0, err
    assert err == ""


#: a reply that takes a while: the signal lands while the turn waits for it
SLOW = {"models": {"*": [{"text": "row done", "first_content_delay_ms": 600}]}}


def test_a_chat_turn_is_not_cancelled_by_sigint(tmp_path: Path) -> None:
    with fake_server(SLOW, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "m", "--json"]
        proc = _background([*args, "hi"])
        until(lambda: records(url), "the request to arrive")
        proc.send_signal(signal.SIGINT)
        code, out, err = finish(proc)
    assert code == 0, err
    assert json.loads(out)["turns"][0]["output"] == "row done"


def test_an_interactive_chat_goes_on_after_sigint(tmp_path: Path) -> None:
    with fake_server({"models": {"*": [{"text": "first reply"}]}}, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "m"]
        proc = _background(args, stdin=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("hello\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "first reply\n"  # now waiting for the next line
        proc.send_signal(signal.SIGINT)
        proc.stdin.write("again\n")
        stdin, proc.stdin = proc.stdin, None
        stdin.close()
        code, out, err = finish(proc)
    assert code == 0, err
    assert out == "first reply\n", out  # the reply to "again": the chat went on
    assert err == ""  # no "(/quit, Ctrl-D or EOF ends the chat)": that is Ctrl-C's answer


def test_a_batch_run_finishes_after_sigint(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"id": "r{i}", "prompt": "q{i}"}}\n' for i in range(3)))
    out_path = tmp_path / "out.jsonl"
    with fake_server(SLOW, tmp_path) as url:
        args = ["batch", "run", str(rows), "-o", str(out_path), "--provider", "anthropic"]
        proc = _background([*args, "--model", "m", "--base-url", url])
        until(lambda: records(url), "the first request to arrive")
        proc.send_signal(signal.SIGINT)
        code, _, err = finish(proc)
    assert code == 0, err
    lines = [json.loads(line) for line in out_path.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == ["r0", "r1", "r2"]
    assert {line["status"] for line in lines} == {"ok"}
