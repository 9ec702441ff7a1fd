"""The NDJSON line splitter: the SSE parser's framing guarantees, one document per line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slow_params import briefly

from rxturn.errors import ConfigError, StreamProtocolError
from rxturn.wire.ndjson import NDJSONSplitter

from ._support import bytewise, chunked, run


def split(data: bytes, **limits: int) -> list[bytes]:
    """Whole, byte by byte and with trailing data (an unterminated line, not closed): all agree."""
    whole = run(lambda: NDJSONSplitter(**limits), [data])
    assert whole[1] is None, whole[1]
    assert run(lambda: NDJSONSplitter(**limits), bytewise(data)) == whole
    if data.endswith((b"\n", b"\r")):
        assert run(lambda: NDJSONSplitter(**limits), [data + b'{"more"'], close=False) == whole
    return whole[0]


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_line_ends(end: bytes) -> None:
    assert split(b'{"a":1}' + end + b'{"b":2}' + end) == [b'{"a":1}', b'{"b":2}']


def test_blank_and_whitespace_lines_are_skipped_but_counted() -> None:
    splitter = NDJSONSplitter()
    assert splitter.feed(b'{"a":1}\n\n  \t\n\r\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert splitter.line_numbers == [1, 5]
    assert splitter.line == 6


def test_crlf_split_across_chunks() -> None:
    splitter = NDJSONSplitter()
    assert splitter.feed(b"{}\r") == [b"{}"]
    assert splitter.feed(b"\n{}\r\n") == [b"{}"]
    assert splitter.line_numbers == [2]


def test_last_line_without_newline_comes_at_close() -> None:
    splitter = NDJSONSplitter()
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert splitter.close() == [b'{"b"']
    assert splitter.line_numbers == [2]
    assert splitter.close() == []
    with pytest.raises(ConfigError):
        splitter.feed(b"{}\n")


def test_multi_byte_character_cut_anywhere() -> None:
    data = '{"t":"héllo ✓ 😀"}\n'.encode()
    for cut in range(len(data) + 1):
        assert run(NDJSONSplitter, [data[:cut], data[cut:]]) == ([data[:-1]], None)


def test_leading_bom_is_dropped() -> None:
    assert split(b"\xef\xbb\xbf{}\n") == [b"{}"]


def test_invalid_utf8_names_the_line_after_returning_the_good_lines() -> None:
    data = b'{"a":1}\n\n{"b":"\xff"}\n{"c":3}\n'
    for chunks in ([data], bytewise(data)):
        lines, error = run(NDJSONSplitter, chunks)
        assert lines == [b'{"a":1}']
        assert error is not None and error.startswith(
            "StreamProtocolError: NDJSON line is not valid"
        )
        assert error.endswith("(line 3)")


def test_line_limit() -> None:
    assert split(b"x" * 8 + b"\n", max_line_bytes=8) == [b"x" * 8]
    data = b"{}\n" + b"x" * 9 + b"\n"
    for chunks in ([data], bytewise(data)):
        assert run(lambda: NDJSONSplitter(max_line_bytes=8), chunks) == (
            [b"{}"],
            "StreamProtocolError: NDJSON line longer than 8 bytes (line 2)",
        )


def test_a_line_that_never_ends_fails_early_and_stays_failed() -> None:
    splitter = NDJSONSplitter(max_line_bytes=16)
    with pytest.raises(StreamProtocolError, match=r"line 1"):
        for _ in range(100):
            splitter.feed(b"xx")
    with pytest.raises(StreamProtocolError, match=r"line 1"):
        splitter.close()


_line = st.text(st.characters(codec="utf-8", exclude_characters="\r\n\ufeff"), max_size=8)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(_line, max_size=12),
    ends=st.lists(st.sampled_from(["\n", "\r", "\r\n"]), min_size=12, max_size=12),
    tail=st.one_of(st.just(""), _line),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_any_chunking_matches_a_regex_split(
    lines: list[str], ends: list[str], tail: str, cuts: list[int]
) -> None:
    text = "".join(line + end for line, end in zip(lines, ends, strict=False)) + tail
    data = text.encode()
    # oracle: split the decoded text at CRLF / CR / LF, drop blank lines
    expected = [
        part.encode() for part in re.split(r"\r\n|\r|\n", text) if part.strip(" \t\x0b\x0c")
    ]
    assert run(NDJSONSplitter, chunked(data, cuts)) == (expected, None)


test_any_chunking_matches_a_regex_split_briefly = briefly(
    test_any_chunking_matches_a_regex_split, 60
)


def test_limit_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        NDJSONSplitter(max_line_bytes=0)


def test_partial_line_over_the_limit_after_complete_lines_then_sticky() -> None:
    splitter = NDJSONSplitter(max_line_bytes=8)
    assert splitter.feed(b"{}\n" + b"x" * 9) == [b"{}"]
    for _ in range(2):
        with pytest.raises(StreamProtocolError, match=r"longer than 8 bytes \(line 2\)"):
            splitter.feed(b"\n")


def test_a_stream_of_one_bom_byte_is_a_line_of_bad_utf8() -> None:
    splitter = NDJSONSplitter()
    assert splitter.feed(b"\xef") == []
    with pytest.raises(StreamProtocolError, match=r"not valid UTF-8 .*\(line 1\)"):
        splitter.close()
