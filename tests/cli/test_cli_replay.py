"""``rxturn replay``: output on success, exit 2 + one stderr line on any failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from recorded import FIXTURES

from rxturn import replay_message
from rxturn.cli import main
from rxturn.messages import message_to_json

from ._support import clean_env

TOOL_USE = FIXTURES / "anthropic" / "tool_use_response.sse"
PARALLEL = FIXTURES / "openai" / "multiple_tool_calls.sse"
BASIC = FIXTURES / "anthropic" / "basic_response.sse"


def rxturn(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rxturn", "replay", *map(str, args)],
        env=clean_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


# -- success -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/*.sse")), ids=lambda p: p.name)
def test_json_prints_exactly_one_message_object(path: Path) -> None:
    result = rxturn(path, "--json")
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)  # exactly one JSON document (json.loads rejects more)
    assert result.stdout.count("\n") == 1
    assert list(document) == ["id", "model", "role", "content", "stop_reason", "usage"]
    assert document == json.loads(message_to_json(replay_message(path)))


@pytest.mark.slow
def test_explicit_format_gives_the_same_json() -> None:
    assert (
        rxturn(PARALLEL, "--json", "--format", "openai").stdout == rxturn(PARALLEL, "--json").stdout
    )


def test_text_output_lists_text_tool_calls_and_stop_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    message = replay_message(TOOL_USE)
    assert main(["replay", str(TOOL_USE)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    call = message.tool_calls[0]
    assert lines[0] == message.text
    assert lines[1] == f"[tool_call {call.name}] {json.dumps(call.input, separators=(',', ':'))}"
    assert lines[2] == "-- stop: tool_call, usage: 377 in, 65 out"
    assert len(lines) == 3


def test_text_output_with_parallel_calls_and_no_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(PARALLEL)]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [call.name for call in replay_message(PARALLEL).tool_calls]
    assert [line.split("]")[0] for line in lines[:-1]] == [f"[tool_call {n}" for n in names]
    assert lines[-1].startswith("-- stop: tool_call, usage: ")


def test_text_output_names_the_cache_and_reasoning_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A recorded Responses stream with a cache hit and reasoning: the counts the provider
    reported above zero are named beside the totals (read from the recording's own usage)."""
    path = (
        Path(__file__).resolve().parents[1]
        / "fixtures/openai-responses/reasoning_code_interpreter.sse"
    )
    data = path.read_bytes()
    usage = next(
        json.loads(line[5:])["response"]["usage"]
        for line in data.splitlines()
        if line.startswith(b"data:") and b'"response.completed"' in line
    )
    assert main(["replay", str(path)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    cached = usage["input_tokens_details"]["cached_tokens"]
    reasoning = usage["output_tokens_details"]["reasoning_tokens"]
    assert cached and reasoning  # the recording has both
    assert last.endswith(
        f"usage: {usage['input_tokens']} in ({cached} cache read), "
        f"{usage['output_tokens']} out ({reasoning} reasoning)"
    )


@pytest.mark.slow
def test_help_lists_replay() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rxturn", "--help"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "replay" in result.stdout


# -- failures: exit 2, exactly one line on stderr, nothing on stdout ------------------------------


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, str, tuple[str, ...]]]:
    """name -> (file, expected text in the error, extra arguments)."""
    basic = BASIC.read_bytes()
    lines = basic.split(b"\n")
    tool = TOOL_USE.read_bytes()
    cases: dict[str, tuple[bytes | None, str, tuple[str, ...]]] = {
        "missing file": (None, "no such file", ()),
        "empty file": (b"", "empty stream (line 1)", ()),
        "garbage": (b"\x00\x01 hello garbage\n", "cannot tell the stream format", ()),
        "bad utf-8": (
            b"\n".join([*lines[:4], b"data: \xff\xfe", *lines[4:]]),
            "(line 5)",
            ("--format", "anthropic"),
        ),
        "bad json": (b"\n".join([*lines[:4], b"data: {nope", *lines[4:]]), "(line 5)", ()),
        "truncated": (basic[: basic.index(b"event: content_block_stop")], "truncated", ()),
        "invalid tool json": (
            tool.replace(b'"partial_json":"{', b'"partial_json":"{{', 1),
            "invalid tool input JSON",
            (),
        ),
        "in-stream error": (
            b"\n".join(
                [
                    *lines[:3],
                    b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
                    b'"message":"Overloaded\\nplease retry"}}\n',
                    *lines[3:],
                ]
            ),
            "overloaded_error: Overloaded",
            (),
        ),
        "oversized line": (
            lines[0] + b"\n" + b"data: " + b"x" * (2 << 20) + b"\n\n",
            "(line 2)",
            ("--format", "anthropic"),
        ),
        "wrong format": (PARALLEL.read_bytes(), "(line 1)", ("--format", "anthropic")),
        "directory": (None, "directory", ()),
    }
    out: dict[str, tuple[Path, str, tuple[str, ...]]] = {}
    for number, (name, (content, expected, extra)) in enumerate(cases.items()):
        file = tmp / f"case{number}.sse"
        if name == "directory":
            file.mkdir()
        elif content is not None:
            file.write_bytes(content)
        out[name] = (file, expected, extra)
    return out


CASES = [
    "missing file",
    "empty file",
    "garbage",
    "bad utf-8",
    "bad json",
    "truncated",
    "invalid tool json",
    "in-stream error",
    "oversized line",
    "wrong format",
    "directory",
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_failure_in_a_subprocess(tmp_path: Path, case: str) -> None:
    file, expected, extra = _bad_inputs(tmp_path)[case]
    for json_flag in ((), ("--json",)):
        result = rxturn(file, *extra, *json_flag)
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith("rxturn replay: ")
        assert expected in result.stderr
        assert result.stderr.rstrip().endswith(")")  # "(<where>)"
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("case", CASES)
def test_failure_via_main(tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    file, expected, extra = _bad_inputs(tmp_path)[case]
    assert main(["replay", str(file), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rxturn replay: ") and expected in err


def test_invalid_format_choice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay", str(BASIC), "--format", "gemini"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--format" in err


# -- thinking, refusals, the Responses API ------------------------------------------------------

THINKING = Path(__file__).resolve().parent.parent / "fixtures" / "anthropic" / "thinking_stream.sse"
RESPONSES_CALL = (
    Path(__file__).resolve().parent.parent / "fixtures" / "openai-responses" / "function_call.sse"
)


@pytest.mark.slow
def test_keep_thinking_adds_the_thinking_part_and_nothing_else() -> None:
    plain = json.loads(rxturn(THINKING, "--json").stdout)
    kept = json.loads(rxturn(THINKING, "--json", "--keep-thinking").stdout)
    assert [p["type"] for p in plain["content"]] == ["text"]
    assert [p["type"] for p in kept["content"]] == ["thinking", "text"]
    assert list(kept["content"][0]) == ["type", "thinking", "signature"]  # no empty id
    assert kept["content"][0]["signature"]
    assert kept["content"][1:] == plain["content"]
    assert {k: v for k, v in kept.items() if k != "content"} == {
        k: v for k, v in plain.items() if k != "content"
    }


def test_keep_thinking_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--keep-thinking", str(THINKING)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[thinking] ")


@pytest.mark.slow
def test_responses_format_explicit_and_auto() -> None:
    explicit = rxturn(RESPONSES_CALL, "--json", "--format", "openai-responses")
    assert (explicit.returncode, explicit.stderr) == (0, "")
    assert explicit.stdout == rxturn(RESPONSES_CALL, "--json").stdout
    document = json.loads(explicit.stdout)
    assert document["stop_reason"] == "tool_call"
    assert document["content"][0]["type"] == "tool_call"


def test_refusal_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    refusal = FIXTURES / "openai" / "refusal.sse"
    assert main(["replay", str(refusal)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[refusal] I'm sorry, I can't assist with that request."
    assert lines[1].startswith("-- stop: refusal,")


@pytest.mark.slow
def test_wrong_format_for_a_responses_stream_is_exit_2() -> None:
    result = rxturn(RESPONSES_CALL, "--format", "anthropic")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("rxturn replay: ") and result.stderr.count("\n") == 1
