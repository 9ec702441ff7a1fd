"""Input faults the scan must refuse with the line number, in process: a key twice in one JSON
object, a byte order mark, bytes that are not UTF-8, a line too long to be one request, an
input with no rows, rows given to the Python API that are no rows at all."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rxturn.batch import (
    BatchConfig,
    BatchInputError,
    BatchRow,
    FileRun,
    decode_row,
    input_sha,
    run_batch,
    scan_input,
)
from rxturn.batch import _input as input_module
from rxturn.batch._checks import duplicate_key
from rxturn.errors import ConfigError
from rxturn.messages import Message

GOOD = '{"id": "ok", "prompt": "fine"}\n'


def _scan_error(tmp_path: Path, data: bytes) -> BatchInputError:
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    with pytest.raises(BatchInputError) as caught:
        scan_input(path)
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('{"id": "a", "prompt": "x", "prompt": "y"}', "prompt"),
        ('{"id": "a", "id": "b", "prompt": "x"}', "id"),
        (
            '{"id": "a", "prompt": "x", "options": {"temperature": 1, "temperature": 0}}',
            "temperature",
        ),
        (
            '{"custom_id": "a", "params": {"messages": [{"role": "user", "role": "assistant",'
            ' "content": "q"}]}}',
            "role",
        ),
        ('{"id": "a", "prompt" : "x",\t"prompt"\t:"y"}', "prompt"),  # spaces before the colon
    ],
)
def test_a_key_twice_in_one_object_names_the_line_and_the_key(
    tmp_path: Path, line: str, key: str
) -> None:
    error = _scan_error(tmp_path, (GOOD + line + "\n").encode())
    assert error.line == 2
    assert str(error) == f"line 2: the key {key!r} appears twice in one object"


@pytest.mark.parametrize(
    "row",
    [
        {"id": "a", "prompt": 'say "x": and "y":'},  # quotes and colons inside a string
        {"id": "a", "prompt": "x", "options": {"stop_sequences": ['":', '" :']}},
        {"id": "a", "messages": [{"role": "user", "content": [{"type": "text", "text": "q"}]}]},
        {"id": "a", "prompt": "x", "system": "a: b"},
    ],
)
def test_the_same_key_in_different_objects_or_inside_strings_is_no_duplicate(
    row: dict[str, Any],
) -> None:
    raw = json.dumps(row).encode()
    assert duplicate_key(raw, json.loads(raw)) is None


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\xef\xbb\xbf" + GOOD.encode(), "UTF-8 byte order mark (BOM); save the file as UTF-8"),
        # what PowerShell's > writes: UTF-16 (read as bytes, "not UTF-8 ... 0xff")
        (GOOD.encode("utf-16"), "UTF-16 byte order mark: the file is UTF-16 text; save it"),
        (b"\xfe\xff" + GOOD.encode("utf-16-be"), "UTF-16 byte order mark"),
    ],
    ids=["utf-8", "utf-16", "utf-16-be"],
)
def test_a_byte_order_mark_is_named(tmp_path: Path, data: bytes, said: str) -> None:
    error = _scan_error(tmp_path, data)
    assert str(error).startswith(f"line 1: starts with a {said}")


def test_bytes_that_are_not_utf8_are_named_with_their_column(tmp_path: Path) -> None:
    error = _scan_error(tmp_path, GOOD.encode() + b'{"id": "b", "prompt": "caf\xe9"}\n')
    assert str(error) == "line 2: not UTF-8 text (byte 0xe9 at column 27)"


def test_a_line_longer_than_a_request_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_module, "MAX_LINE_BYTES", 1000)
    long_row = json.dumps({"id": "b", "prompt": "y" * 5000})
    error = _scan_error(tmp_path, (GOOD + long_row + "\n").encode())
    assert str(error) == "line 2: longer than 1000 bytes (a row is one request)"

    class Reader:  # what iter_lines asks of the file
        def __init__(self, data: bytes) -> None:
            self.file = io.BytesIO(data)
            self.asked: list[int] = []

        def readline(self, limit: int = -1) -> bytes:
            self.asked.append(limit)
            return self.file.readline(limit)

    reader = Reader((GOOD + long_row + "\n").encode())
    with pytest.raises(BatchInputError):
        list(input_module.iter_lines(reader))  # pyright: ignore[reportArgumentType]
    assert reader.asked == [1001, 1001]  # never more than the limit and one byte at once


def test_the_limit_is_32_mib() -> None:
    assert input_module.MAX_LINE_BYTES == 32 << 20


def test_a_line_just_under_the_limit_is_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_module, "MAX_LINE_BYTES", 1000)
    row = json.dumps({"id": "b", "prompt": "y" * 100})
    row += " " * (1000 - len(row))  # 1000 bytes and the newline
    path = tmp_path / "in.jsonl"
    path.write_text(GOOD + row + "\n")
    assert list(scan_input(path).keys) == ["ok", "b"]


@pytest.mark.parametrize("data", [b"", b"\n\n  \n\t\n", b"\r\n"])
def test_an_input_without_rows_is_refused_before_anything_is_written(
    tmp_path: Path, data: bytes
) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(data)
    out = tmp_path / "out.jsonl"
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:1")
    file_run = FileRun(inp, out, config)
    with pytest.raises(BatchInputError, match=r"^the input has no rows"):
        file_run.prepare()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]  # nor a lock file
    with pytest.raises(BatchInputError):  # the lock was released: not BatchLockedError
        FileRun(inp, out, config).prepare()


def test_blank_lines_between_rows_keep_the_line_numbers(tmp_path: Path) -> None:
    error = _scan_error(tmp_path, (GOOD + "\n\n" + "{oops\n").encode())
    assert error.line == 4


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (None, "rows must be an iterable of rows (mappings or BatchRow), got NoneType"),
        (5, "got int"),
        ("abc", "got str"),
        ({"id": "a", "prompt": "x"}, "got dict"),
    ],
)
async def test_the_python_api_refuses_rows_that_are_not_an_iterable_of_rows(
    rows: Any, words: str
) -> None:
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:1")
    with pytest.raises(ConfigError, match=re.escape(words)):
        await run_batch(rows, config)


@pytest.mark.parametrize("item", [1, None, "a row", ["id", "a"]])
async def test_the_python_api_names_a_row_that_is_not_a_mapping(item: Any) -> None:
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:1")
    with pytest.raises(BatchInputError, match=r"^row 1: expected a mapping") as caught:
        await run_batch([item], config)
    assert caught.value.line == 1


_USER = (Message.user("x"),)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (BatchRow(key="", messages=_USER), "key must be a non-empty string, got ''"),
        (BatchRow(key=5, messages=_USER), "key must be a non-empty string, got 5"),  # pyright: ignore[reportArgumentType]
        (BatchRow(key="a", messages=()), "the conversation must end with a user message"),
        (
            BatchRow(key="a", messages=(Message.assistant("x"),)),
            "the conversation must end with a user message",
        ),
        (
            BatchRow(key="a", messages=({"role": "user", "content": "x"},)),  # pyright: ignore[reportArgumentType]
            "messages must be a sequence of Message",
        ),
        (BatchRow(key="a", messages=_USER, system=3), "system must be a string or None, got int"),  # pyright: ignore[reportArgumentType]
        (
            BatchRow(key="a", messages=_USER, options={"bogus": 1}),
            "options: unknown request option 'bogus'",
        ),
        (
            BatchRow(key="a", messages=_USER, options={"max_tokens": 0}),
            "options: RequestOptions.max_tokens must be a positive integer, got 0",
        ),
    ],
)
async def test_the_python_api_holds_a_batch_row_to_what_a_decoded_row_is(
    row: BatchRow, words: str
) -> None:
    """A BatchRow made in Python is not checked when it is made: the run checks it before
    sending it, as the other shapes are checked when they are decoded."""
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:1")
    with pytest.raises(BatchInputError) as caught:
        await run_batch([row], config)
    assert str(caught.value) == f"row 1: BatchRow: {words}"


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"provider": "anthropic", "model": "m"}, "config must be a BatchConfig, got dict"),
        (None, "config must be a BatchConfig, got NoneType"),
        (
            BatchConfig(provider="anthropic", model="m", concurrency="5"),  # pyright: ignore[reportArgumentType]
            "BatchConfig: Expected `int`, got `str` - at `$.concurrency`",
        ),
        (
            BatchConfig(provider="anthropic", model=None),  # pyright: ignore[reportArgumentType]
            "BatchConfig: Expected `str`, got `null` - at `$.model`",
        ),
        (
            BatchConfig(provider="anthropic", model="m", fallback="backup"),  # pyright: ignore[reportArgumentType]
            "BatchConfig: Expected `array`, got `str` - at `$.fallback`",
        ),
        (BatchConfig(provider="gemini", model="m"), "provider must be one of"),  # pyright: ignore[reportArgumentType]
        (
            BatchConfig(provider="anthropic", model="m", concurrency=0),
            "concurrency must be an integer >= 1, got 0",
        ),
        (
            BatchConfig(provider="anthropic", model="m", concurrency=-3),
            "concurrency must be an integer >= 1, got -3",
        ),
        (
            BatchConfig(provider="anthropic", model="m", concurrency=True),
            "BatchConfig: Expected `int`, got `bool` - at `$.concurrency`",
        ),
        # before: AttributeError ('bytes' object has no attribute 'encode'): msgspec's check
        # took the bytes for their base64 text
        (
            BatchConfig(provider="anthropic", model=b"m"),  # pyright: ignore[reportArgumentType]
            "BatchConfig: Expected `str`, got `bytes` - at `$.model`",
        ),
        (
            BatchConfig(provider="anthropic", model="m", system=bytearray(b"s")),  # pyright: ignore[reportArgumentType]
            "BatchConfig: Expected `str | null`, got `bytes` - at `$.system`",
        ),
        # before: UnicodeEncodeError from msgspec, which could not quote the value it refused
        (
            BatchConfig(provider="anthropic", model="m", fallback="\ud800"),  # pyright: ignore[reportArgumentType]
            "fallback is not valid UTF-8 text",
        ),
        (
            BatchConfig(provider="anthropic", model="m", rpm="\udcff"),  # pyright: ignore[reportArgumentType]
            "rpm is not valid UTF-8 text",
        ),
        (
            BatchConfig(provider="anthropic", model="m", fallback=("b", "\ud800")),
            "fallback is not valid UTF-8 text",
        ),
    ],
)
async def test_the_python_api_refuses_a_bad_config_with_a_typed_error(
    config: Any, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        await run_batch([{"id": "a", "prompt": "x"}], config)
    assert words in str(caught.value)


@pytest.mark.parametrize("make", ["Runner", "FileRun", "LocalBackend"])
@pytest.mark.parametrize("config", [None, {"provider": "anthropic", "model": "m"}])
def test_every_batch_entry_refuses_a_config_that_is_not_one(make: str, config: object) -> None:
    # before: AttributeError ('NoneType' object has no attribute 'check' / 'rpm')
    import rxturn.batch as batch

    build: Any = getattr(batch, make)
    args = {
        "Runner": (config,),
        "FileRun": (Path("in.jsonl"), Path("out.jsonl"), config),
        "LocalBackend": (config, None, 1),
    }[make]
    with pytest.raises(ConfigError, match=r"^config must be a BatchConfig, got (NoneType|dict)$"):
        build(*args)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"id": "b", "prompt": "a\x00b"}', "byte 0x00 at column 25"),
        (b'{"id": "b", "prompt": "tab\x1bseq"}', "byte 0x1b at column 27"),
        (b'{"id": "b",\x0c"prompt": "x"}', "byte 0x0c at column 12"),
    ],
    ids=["NUL in a string", "ESC in a string", "form feed between fields"],
)
def test_a_raw_control_character_is_named_with_its_column(
    tmp_path: Path, raw: bytes, words: str
) -> None:
    error = _scan_error(tmp_path, GOOD.encode() + raw + b"\r\n")
    assert str(error) == (
        f"line 2: a raw control character ({words}); JSON writes it escaped, as \\u00XX"
    )


_LOOP: dict[str, object] = {}
_LOOP["self"] = _LOOP


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ({"id": "\ud800", "prompt": "x"}, r"a lone UTF-16 surrogate \(\\ud800 without its pair\)"),
        ({"id": "a", "prompt": "x", "options": {"seed": 10**5000}}, "more digits than Python"),
        ({"id": "a", "prompt": "x", "options": {"seed": object()}}, "type object is unsupported"),
    ],
    ids=["surrogate", "giant-int", "object"],
)
def test_decode_row_given_a_python_row_json_cannot_hold_names_its_line(
    row: dict[str, object], says: str
) -> None:
    # before: UnicodeEncodeError, ValueError or TypeError from msgspec's encoder
    with pytest.raises(BatchInputError, match=r"^line 7: not JSON data: .*" + says) as caught:
        decode_row(row, 7)
    assert caught.value.line == 7


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        (object(), "type object is unsupported"),
        ({"a": "\udfff"}, "lone UTF-16 surrogate"),
        (_LOOP, "nested too deeply"),
    ],
    ids=["object", "surrogate", "cycle"],
)
def test_input_sha_of_what_is_no_json_is_a_batch_input_error(obj: object, says: str) -> None:
    # before: TypeError, UnicodeEncodeError or RecursionError from msgspec's encoder
    with pytest.raises(BatchInputError, match=r"^input_sha: not JSON data: .*" + says):
        input_sha(obj)


@pytest.mark.parametrize("path", [None, 5, b"in.jsonl"], ids=["none", "int", "bytes"])
def test_scan_input_refuses_a_path_of_the_wrong_type(path: object) -> None:
    # before: TypeError from os.fspath
    with pytest.raises(ConfigError, match=r"^scan_input\(path=\.\.\.\) must be a str or a Path"):
        scan_input(path)  # pyright: ignore[reportArgumentType]


def test_scan_input_of_a_path_no_file_system_can_encode_is_a_batch_input_error() -> None:
    # before: UnicodeEncodeError from open()
    with pytest.raises(BatchInputError, match=r"not a file name the file system can encode"):
        scan_input("in\ud800.jsonl")
