"""Input rows: the four shapes decode to the same turn, and every bad line names its number."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from rxturn.batch import BatchInputError, decode_row, input_sha, scan_input
from rxturn.batch._input import iter_lines, spool_input
from rxturn.messages import Message


def test_the_four_shapes_ask_the_same_question() -> None:
    native = decode_row({"id": "a", "prompt": "hi"}, 1)
    messages = decode_row(
        {"id": "a", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
        1,
    )
    openai = decode_row(
        {
            "custom_id": "a",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
        },
        1,
    )
    anthropic = decode_row(
        {
            "custom_id": "a",
            "params": {
                "model": "claude-x",
                "max_tokens": 50,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            },
        },
        1,
    )
    for row in (native, messages, openai, anthropic):
        assert row.key == "a"
        assert row.messages == (Message.user("hi"),)
    assert native.model is None
    assert openai.model == "gpt-x"
    assert anthropic.model == "claude-x"
    assert anthropic.options == {"max_tokens": 50}


def test_a_system_role_and_body_fields_become_system_and_options() -> None:
    row = decode_row(
        {
            "custom_id": 7,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "gpt-x",
                "max_completion_tokens": 20,
                "temperature": 0.5,
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                    {"role": "user", "content": "again"},
                ],
            },
        },
        3,
    )
    assert row.key == "7"
    assert row.system == "be brief"
    assert [m.role for m in row.messages] == ["user", "assistant", "user"]
    assert row.options == {"max_tokens": 20, "temperature": 0.5}


def test_a_row_without_an_id_is_keyed_by_line_and_content() -> None:
    first = decode_row({"prompt": "hi"}, 4, b'{"prompt": "hi"}\n')
    again = decode_row({"prompt": "hi"}, 4, b'{"prompt": "hi"}\n')
    other = decode_row({"prompt": "hi"}, 5, b'{"prompt": "hi"}\n')
    assert first.key == again.key
    assert first.key != other.key
    assert first.key.startswith("line-4-")


def test_input_sha_is_the_sha256_of_canonical_json() -> None:
    row = {"prompt": "h\u00e9", "id": "a", "options": {"temperature": 1, "max_tokens": 5}}
    canonical = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert input_sha(row) == hashlib.sha256(canonical.encode()).hexdigest()


def test_input_sha_spells_numbers_as_docs_batch_md_says() -> None:
    """Floats in their shortest exact spelling (not Python's ``1e-07``), text as UTF-8."""
    row = {"prompt": "\u00e9", "id": "a", "options": {"extra_body": {"k": [1e-7, 1e16, 1e-5]}}}
    canonical = b'{"id":"a","options":{"extra_body":{"k":[1e-7,1e16,0.00001]}},"prompt":"\xc3\xa9"}'
    assert input_sha(row) == hashlib.sha256(canonical).hexdigest()


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("not json at all", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"id": "x", "question": "hi"}', "no known shape"),
        ('{"id": "x", "prompt": "   "}', "prompt is empty"),
        ('{"id": "x", "prompt": 5}', "prompt must be a string"),
        ('{"id": "x", "prompt": "hi", "colour": "red"}', "unknown field 'colour'"),
        ('{"id": "x", "prompt": "hi", "options": {"tempo": 1}}', "unknown request option"),
        ('{"id": "x", "prompt": "hi", "options": {"max_tokens": "many"}}', "options"),
        ('{"id": "", "prompt": "hi"}', "id must not be empty"),
        ('{"id": true, "prompt": "hi"}', "id must be a string or an integer"),
        ('{"id": "x", "messages": []}', "messages must be a non-empty list"),
        (
            '{"id": "x", "messages": [{"role": "user", "content": [{"type": "text", '
            '"text": "a"}]}, {"role": "assistant", "content": [{"type": "text", "text": "b"}]}]}',
            "end with a user message",
        ),
        ('{"custom_id": "x", "params": {"messages": "hi"}}', "messages must be a non-empty list"),
        (
            '{"custom_id": "x", "params": {"messages": [{"role": "user", "content": '
            '[{"type": "image"}]}]}}',
            "params.messages[0].content[0]: a media block needs a 'source' object",
        ),
        ('{"custom_id": "x", "method": "POST", "url": "/", "body": 3}', "'body' object"),
        (
            '{"custom_id": "x", "params": {"messages": [{"role": "user", "content": "a"}]}, '
            '"body": {"messages": [{"role": "user", "content": "b"}]}}',
            "unknown field 'body' in an Anthropic batch request (its fields: custom_id, params)",
        ),
        (
            '{"custom_id": "x", "body": {"messages": [{"role": "user", "content": "a"}]}, '
            '"prompt": "b"}',
            "unknown field 'prompt' in an OpenAI Batch line (its fields: body, custom_id, method",
        ),
        (
            '{"id": "x", "messages": [{"role": "tool", "content": "sunny"}]}',
            "messages[0]: a 'tool' message needs 'tool_call_id'",
        ),
        ('{"id": "x", "messages": [{"role": "user", "content": ""}]}', "user message is empty"),
        ('{"id": "x", "messages": [{"role": "user", "content": []}]}', "user message is empty"),
        (
            '{"custom_id": "x", "params": {"messages": [{"role": "user", "content": '
            '[{"type": "text", "text": " "}]}]}}',
            "last user message is empty",
        ),
    ],
)
def test_every_bad_line_is_a_typed_error_naming_its_line(
    tmp_path: Path, line: str, words: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "ok", "prompt": "fine"}\n\n' + line + "\n")
    with pytest.raises(BatchInputError) as caught:
        scan_input(path)
    assert caught.value.line == 3
    assert str(caught.value).startswith("line 3: ")
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("row", [5, None, [{"id": "a", "prompt": "x"}], "x"])
def test_decode_row_given_no_object_is_a_typed_error_naming_the_line(row: object) -> None:
    """``decode_row`` is public: given what is no object it said ``argument of type 'int' is
    not iterable`` (a TypeError), as a JSON line's array is refused in the scan."""
    with pytest.raises(BatchInputError, match=r"^line 4: expected a JSON object, got \w+$"):
        decode_row(row, 4)  # pyright: ignore[reportArgumentType]


def test_a_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": "y"}\n'
        '{"custom_id": "a", "params": {"messages": [{"role": "user", "content": "z"}]}}\n'
    )
    with pytest.raises(BatchInputError, match=r"line 3: duplicate key 'a' \(first on line 1\)"):
        scan_input(path)


def test_the_scan_keeps_keys_in_input_order(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"k{i}", "prompt": "p"}) + "\n" for i in (3, 1, 2)))
    index = scan_input(path)
    assert list(index.keys) == ["k3", "k1", "k2"]
    assert index.total == 3


def test_non_utf8_input_is_a_line_error(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": "a", "prompt": "\xff"}\n')
    with pytest.raises(BatchInputError, match=r"line 1: not UTF-8 text \(byte 0xff at column 24\)"):
        scan_input(path)


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("\\ud800", "\\ud800"),  # a high surrogate ending the string
        ("a\\ud83dz", "\\ud83d"),  # a high one followed by no low one
        ("\\udc00", "\\udc00"),  # a low one alone
        ("ok\\udfff", "\\udfff"),
    ],
)
def test_a_lone_surrogate_escape_is_named_not_called_truncated(
    tmp_path: Path, value: str, found: str
) -> None:
    """JSON may spell a lone UTF-16 surrogate (``"\\ud800"``), which is no character and
    cannot be sent; the error says so, not what the decoder says (``Input data was truncated``
    for a high one at a string's end), in the id as in the prompt."""
    for line in (f'{{"id": "a", "prompt": "{value}"}}', f'{{"id": "{value}", "prompt": "p"}}'):
        path = tmp_path / "in.jsonl"
        path.write_text('{"id": "ok", "prompt": "fine \\ud83d\\ude00"}\n' + line + "\n")
        with pytest.raises(BatchInputError) as info:
            scan_input(path)
        assert str(info.value) == (
            f"line 2: a string holds a lone UTF-16 surrogate ({found} without its pair), "
            "which is not text"
        )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"id": "a", "prompt": "p", "options": {"max_tokens": 0}},
            "line 1: options: RequestOptions.max_tokens must be a positive integer, got 0",
        ),
        (
            {"id": "a", "prompt": "p", "options": {"temperature": -1}},
            "line 1: options: RequestOptions.temperature must be a finite number >= 0, got -1",
        ),
        (
            {"id": "a", "prompt": "p", "options": {"stop_sequences": ["ok", ""]}},
            "line 1: options: RequestOptions.stop_sequences",
        ),
        (
            {
                "custom_id": "a",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"messages": [{"role": "user", "content": "p"}], "max_tokens": -5},
            },
            "line 1: body: RequestOptions.max_tokens must be a positive integer, got -5",
        ),
        (
            {"id": "a", "prompt": "p", "options": {"thinking": 5}},
            "line 1: options: RequestOptions.thinking must be a thinking budget in tokens, an "
            "integer >= 1024",
        ),
        (
            {"id": "a", "prompt": "p", "options": {"thinking": 2000, "max_tokens": 100}},
            "line 1: options: RequestOptions.thinking=2000 must be below max_tokens=100",
        ),
        (
            {"id": "a", "prompt": "p", "options": {"tool_choice": "any"}},
            "line 1: options: RequestOptions.tool_choice='any' needs tools",
        ),
        (
            {"id": "a", "prompt": "p", "options": {"extra_body": {"stream": False}}},
            "line 1: options: RequestOptions.extra_body may not set 'stream'",
        ),
    ],
    ids=[
        "max-tokens-0",
        "negative-temperature",
        "empty-stop",
        "openai-body-max-tokens",
        "thinking-below-floor",
        "thinking-over-max-tokens",
        "tool-choice-without-tools",
        "extra-body-stream",
    ],
)
def test_an_option_of_the_right_type_but_out_of_range_is_refused_in_the_scan(
    tmp_path: Path, row: dict[str, object], message: str
) -> None:
    """The scan refuses what no request could carry, before anything is sent (exit 2), not
    each row's request when it runs (an error line per row, exit 3): a value of the right
    type but out of range, as a value of the wrong type is."""
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(BatchInputError) as info:
        scan_input(path)
    assert str(info.value).startswith(message)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc/self/fd: a named copy")
def test_a_spooled_input_has_no_name_a_killed_run_could_leave_behind(tmp_path: Path) -> None:
    """stdin's copy is read by path (the scan, then the run) but has no name: a run killed with
    kill -9 leaves nothing in TMPDIR, where each left a copy of its whole input."""
    data = b'{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": "y"}\n'
    spool = spool_input(io.BytesIO(data), directory=str(tmp_path))
    try:
        assert list(tmp_path.iterdir()) == []
        with spool.path.open("rb") as file:
            assert [raw for _, raw in iter_lines(file)] == data.splitlines(True)
        assert scan_input(spool.path).total == 2  # read again, from the start
    finally:
        spool.close()
    spool.close()  # (twice: no error)


@pytest.mark.parametrize("name", ["m\nx", "m\x1b[31m", "m\x9b"], ids=["newline", "escape", "c1"])
@pytest.mark.parametrize(
    ("shape", "where"),
    [
        (lambda name: {"id": "a", "prompt": "p", "model": name}, "model"),
        (lambda name: {"id": "a", "prompt": "p", "options": {"model": name}}, "options: model"),
        (
            lambda name: {
                "custom_id": "a",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": name, "messages": [{"role": "user", "content": "p"}]},
            },
            "body.model",
        ),
        (
            lambda name: {
                "custom_id": "a",
                "params": {
                    "model": name,
                    "max_tokens": 5,
                    "messages": [{"role": "user", "content": "p"}],
                },
            },
            "params.model",
        ),
    ],
    ids=["native", "options", "openai-batch", "anthropic-batch"],
)
def test_a_rows_model_with_a_control_character_is_refused_in_the_scan(
    tmp_path: Path, shape: Any, where: str, name: str
) -> None:
    # before: accepted (--model and BatchConfig refused such a name; a row's own did not), so
    # each request went out under it and the error lines showed it raw
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(shape(name)) + "\n")
    with pytest.raises(BatchInputError) as info:
        scan_input(path)
    assert str(info.value).startswith(f"line 1: {where} holds a control character")
