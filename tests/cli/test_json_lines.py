"""``--json`` output is JSON lines for every line splitter: a reply or an error message holding
U+2028, U+2029 or U+0085 (line breaks to ``str.splitlines``, JavaScript and many JSON-lines
readers, though JSON lets them stand raw inside a string) went out raw, so one object read as
several lines, none of them JSON. They are written as ``\\u`` escapes: the same JSON value.

In-process: the command's ``main`` against a fake provider on a thread of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

BREAKS = "one\u2028two\u2029three\x85four"


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
def test_a_reply_with_unicode_line_breaks_is_one_json_line(
    provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadedFake({"models": {"*": [{"text": BREAKS}]}}) as fake:
        args = ["chat", "--provider", provider, "--base-url", fake.base_url, "--model", "m"]
        code = main([*args, "--json", "hi"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert code == 0 and len(lines) == 1
    record = json.loads(lines[0])
    assert record["message"]["content"] == [{"type": "text", "text": BREAKS}]
    assert record["turns"][0]["output"] == BREAKS


def test_a_failed_turn_with_unicode_line_breaks_is_one_json_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The error object carries the turn's audit: its input is the prompt, as typed."""
    scenario = {"models": {"*": [{"status": 400, "error_message": "no"}]}}
    with ThreadedFake(scenario) as fake:
        args = ["chat", "--provider", "anthropic", "--base-url", fake.base_url, "--model", "m"]
        code = main([*args, "--json", BREAKS])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1 and len(lines) == 1
    record = json.loads(lines[0])
    assert record["error"]["type"] == "BadRequestError"
    assert record["turns"][0]["input"] == BREAKS


def test_replay_json_with_unicode_line_breaks_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chunk = {"model": "m", "message": {"role": "assistant", "content": BREAKS}, "done": False}
    last = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True}
    path = tmp_path / "reply.ndjson"
    path.write_text("".join(json.dumps(c) + "\n" for c in (chunk, last)), encoding="utf-8")
    code = main(["replay", str(path), "--format", "ollama", "--json"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and len(lines) == 1
    assert json.loads(lines[0])["content"] == [{"type": "text", "text": BREAKS}]


def test_a_batch_output_line_with_unicode_line_breaks_is_one_line(tmp_path: Path) -> None:
    """The batch output file is JSON lines too, read back by users with any line splitter."""
    rows = tmp_path / "in.jsonl"
    rows.write_text('{"id": "a", "prompt": "hi"}\n{"id": "b", "prompt": "hi"}\n')
    out = tmp_path / "out.jsonl"
    with ThreadedFake({"models": {"*": [{"text": BREAKS}]}}) as fake:
        args = ["--provider", "anthropic", "--base-url", fake.base_url, "--model", "m"]
        code = main(["batch", "run", str(rows), "-o", str(out), *args, "--progress", "none"])
    lines = out.read_text(encoding="utf-8").splitlines()
    assert code == 0 and len(lines) == 2
    for line in lines:
        assert json.loads(line)["message"]["content"] == [{"type": "text", "text": BREAKS}]
