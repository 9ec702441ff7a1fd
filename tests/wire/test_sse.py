"""The sans-IO SSE parser against the WHATWG event-stream rules.

Every case runs h11's three ways (whole buffer, one byte at a time, with trailing data), and
hypothesis checks that any chunking of any stream gives the events of an independent
line-at-a-time oracle (``_support.oracle_sse``), both through ``feed`` and ``feed_raw``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slow_params import briefly

from rxturn.errors import ConfigError, StreamProtocolError
from rxturn.wire.sse import RawEvents, ServerSentEvent, SSEParser

from ._support import bytewise, chunked, oracle_sse, run

E = ServerSentEvent


def parse(data: bytes, **limits: int) -> list[ServerSentEvent]:
    """Parse whole, byte by byte and with trailing data; all three must agree."""
    whole = run(lambda: SSEParser(**limits), [data])
    assert run(lambda: SSEParser(**limits), bytewise(data)) == whole
    # h11's third way: the same stream followed by the start of another event (not closed)
    if data.endswith((b"\n\n", b"\r\r", b"\r\n\r\n")) and whole[1] is None:
        trailing = run(lambda: SSEParser(**limits), [data + b"data: more"], close=False)
        assert trailing == whole
    assert whole[1] is None, whole[1]
    return whole[0]


class TestLineEnds:
    @pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
    def test_every_line_end_separates_lines(self, end: bytes) -> None:
        data = end.join([b"event: a", b"data: 1", b"", b"data: 2", b"data: 3", b"", b""])
        assert parse(data) == [E("a", "1"), E("message", "2\n3")]

    def test_mixed_line_ends(self) -> None:
        assert parse(b"data: a\rdata: b\r\ndata: c\n\r\n") == [E("message", "a\nb\nc")]

    def test_crlf_split_across_chunks_is_one_line_end(self) -> None:
        parser = SSEParser()
        assert parser.feed(b"data: a\r") == []
        assert parser.line == 2
        # the LF belongs to the CR: no blank line yet, so nothing is dispatched
        assert parser.feed(b"\ndata: b\r") == []
        assert parser.feed(b"\n\r") == [E("message", "a\nb")]
        assert parser.feed(b"\n") == []
        assert parser.line == 4
        assert parser.close() == []

    def test_cr_at_chunk_end_followed_by_a_line(self) -> None:
        parser = SSEParser()
        assert parser.feed(b"data: a\r") == []
        assert parser.feed(b"\r") == [E("message", "a")]
        assert parser.feed(b"data: b\r") == []
        assert parser.feed(b"\rdata: c") == [E("message", "b")]
        assert parser.close() == [E("message", "c")]

    def test_other_ascii_separators_are_not_line_ends(self) -> None:
        assert parse(b"data: a\x0bb\x0cc\x1cd\n\n") == [E("message", "a\x0bb\x0cc\x1cd")]


class TestFields:
    def test_one_optional_space_after_the_colon(self) -> None:
        data = b"data:compact\n\ndata: spaced\n\ndata:  two\n\n"
        assert parse(data) == [
            E("message", "compact"),
            E("message", "spaced"),
            E("message", " two"),
        ]

    def test_multi_line_data_joins_with_newlines(self) -> None:
        data = b'data: {\ndata:  "a": 1\ndata: }\n\n'
        assert parse(data) == [E("message", '{\n "a": 1\n}')]

    def test_data_without_colon_is_an_empty_line_of_data(self) -> None:
        assert parse(b"data\ndata\n\n") == [E("message", "\n")]

    def test_empty_data_dispatches_an_event_with_empty_data(self) -> None:
        # WHATWG: the data buffer holds "\n", which is not empty, so the event is dispatched
        assert parse(b"event: x\ndata:\n\n") == [E("x", "")]

    def test_event_without_data_is_not_dispatched_and_resets_the_type(self) -> None:
        assert parse(b"event: ping\n\ndata: a\n\n") == [E("message", "a")]

    def test_event_type_resets_after_each_dispatch(self) -> None:
        assert parse(b"event: x\ndata: 1\n\ndata: 2\n\n") == [E("x", "1"), E("message", "2")]

    def test_empty_event_name_means_message(self) -> None:
        assert parse(b"event:\ndata: 1\n\nevent\ndata: 2\n\n") == [
            E("message", "1"),
            E("message", "2"),
        ]

    def test_comments_and_unknown_fields_are_ignored(self) -> None:
        data = b": keep-alive\n:\nfoo: bar\nData: no\ndata: a\n: mid\n\n"
        assert parse(data) == [E("message", "a")]

    def test_field_names_are_case_sensitive_and_exact(self) -> None:
        assert parse(b"data : a\nDATA: b\nevent : x\ndata: c\n\n") == [E("message", "c")]

    def test_id_is_kept_across_events(self) -> None:
        data = b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"
        assert parse(data) == [
            E("message", "a", "1"),
            E("message", "b", "1"),
            E("message", "c", ""),
        ]

    def test_id_containing_nul_is_ignored(self) -> None:
        assert parse(b"id: 7\n\nid: a\x00b\ndata: x\n\n") == [E("message", "x", "7")]

    def test_id_without_data_still_sets_the_last_event_id(self) -> None:
        parser = SSEParser()
        assert parser.feed(b"id: 42\n\n") == []
        assert parser.last_event_id == "42"

    def test_retry_only_when_all_ascii_digits(self) -> None:
        data = (
            b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\n"
            b"retry: \xc2\xb2\ndata: c\n\nretry:\ndata: d\n\n"
        )
        assert parse(data) == [
            E("message", "a", retry=1500),
            E("message", "b"),
            E("message", "c"),
            E("message", "d"),
        ]

    @pytest.mark.parametrize("digits", [18, 19, 4301, 100_000], ids=str)
    def test_a_retry_too_long_to_be_a_delay_is_ignored(self, digits: int) -> None:
        # 18 digits of milliseconds are 31 million years: a longer value is no delay, and
        # turning thousands of digits into an int is refused by Python (ValueError)
        value = b"7" * digits
        data = b"retry: " + value + b"\ndata: a\n\ndata: b\n\n"
        expected_retry = int(value) if digits <= 18 else None
        assert parse(data) == [E("message", "a", retry=expected_retry), E("message", "b")]
        assert run(_Raw, [data])[1] is None
        assert run(_Raw, [b"data: x\n\n", data, b"data: c\n\n"])[1] is None

    def test_retry_without_data_sets_the_parser_value(self) -> None:
        parser = SSEParser()
        assert parser.feed(b"retry: 3000\n\n") == []
        assert parser.retry == 3000


class TestEncoding:
    def test_multi_byte_characters_cut_at_every_position(self) -> None:
        text = "héllo ✓ 😀 end"
        data = f"event: ünï\ndata: {text}\n\n".encode()
        expected = [E("ünï", text)]
        assert parse(data) == expected
        for cut in range(1, len(data)):
            assert run(SSEParser, [data[:cut], data[cut:]]) == (expected, None)

    def test_leading_bom_is_dropped(self) -> None:
        assert parse(b"\xef\xbb\xbfdata: a\n\n") == [E("message", "a")]

    @pytest.mark.parametrize("cut", [1, 2, 3])
    def test_bom_split_across_chunks(self, cut: int) -> None:
        data = b"\xef\xbb\xbfdata: a\n\n"
        assert run(SSEParser, [data[:cut], data[cut:]]) == ([E("message", "a")], None)

    def test_only_one_leading_bom_is_dropped(self) -> None:
        # the second BOM is part of the field name "\ufeffdata": an unknown field
        assert parse(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [E("message", "b")]

    def test_bom_later_in_the_stream_is_data(self) -> None:
        assert parse(b"data: \xef\xbb\xbfa\n\n") == [E("message", "\ufeffa")]

    @pytest.mark.parametrize(
        ("data", "line"),
        [
            (b"data: ok\n\ndata: bad \xff\n\n", 3),
            (b"event: \xc3\n\ndata: x\n\n", 1),
            (b"event: \xc3(\ndata: x\n\n", 1),
            (b": comment\n: \xe2\x82\ndata: x\n\n", 2),
            (b"data: a\ndata: \xf0\x9f\x98\n\n", 2),
            (b"data: fine\r\nid: \x80\r\n\r\n", 2),
        ],
        ids=["data", "event-name-fast", "event-name", "comment", "second-data-line", "id"],
    )
    def test_invalid_utf8_names_the_line(self, data: bytes, line: int) -> None:
        for chunks in ([data], bytewise(data)):
            _, error = run(SSEParser, chunks)
            assert error is not None
            assert error.startswith("StreamProtocolError: SSE line is not valid UTF-8")
            assert error.endswith(f"(line {line})")


class TestDispatchAndClose:
    def test_close_flushes_a_pending_event_without_blank_line(self) -> None:
        assert run(SSEParser, [b"data: a\ndata: b\n"]) == ([E("message", "a\nb")], None)

    def test_close_interprets_an_unterminated_last_line(self) -> None:
        assert run(SSEParser, [b"event: x\ndata: tail"]) == ([E("x", "tail")], None)

    def test_close_without_data_dispatches_nothing(self) -> None:
        assert run(SSEParser, [b"event: x\nid: 1\n: c"]) == ([], None)

    def test_close_twice_and_feed_after_close(self) -> None:
        parser = SSEParser()
        parser.feed(b"data: a")
        assert parser.close() == [E("message", "a")]
        assert parser.close() == []
        with pytest.raises(ConfigError):
            parser.feed(b"data: b\n\n")

    def test_line_numbers_of_events(self) -> None:
        parser = SSEParser()
        data = b": hi\nevent: a\ndata: 1\n\ndata: 2\ndata: 3\n\n\n\nid: 9\ndata: 4\n\n"
        assert len(parser.feed(data)) == 3
        # lines: 1 ": hi", 2 event, 3 data, 4 "", 5-6 data, 7-9 "", 10 id, 11 data, 12 ""
        assert parser.event_lines == [3, 5, 11]
        assert parser.line == 13

    def test_raw_events_carry_bytes_and_line(self) -> None:
        parser = SSEParser()
        raw = parser.feed_raw(b'event: e\ndata: {"a":1}\n\ndata: x\ndata: y\n\n')
        assert _tuples(raw) == [("e", b'{"a":1}', 2), ("message", b"x\ny", 4)]
        assert len(parser.close_raw()) == 0

    @pytest.mark.parametrize(
        "data",
        [
            b"event: a\ndata: 1\n\nevent: bb\ndata: 22\n\nevent: c\ndata: \xff\n\n",
            b"data: 1\n\ndata: 22\n\ndata: {}\n\n",
        ],
        ids=["event-blocks", "data-blocks"],
    )
    def test_uniform_chunks_find_names_and_lines_on_demand(self, data: bytes) -> None:
        # raw mode leaves UTF-8 to the consumer: the invalid payload is passed on as bytes
        parser = SSEParser()
        assert len(parser.feed_raw(b": hello\n\n")) == 0
        raw = parser.feed_raw(data)
        assert raw._runs  # taken in one go, not block by block
        shape = 3 if data.startswith(b"event") else 2
        assert [raw.line(i) for i in range(len(raw))] == [
            2 + shape * i + shape - 1 for i in range(3)
        ]
        names = ["a", "bb", "c"] if shape == 3 else ["message"] * 3
        assert [raw.name(i) for i in range(len(raw))] == names
        assert raw.payloads == [line[6:] for line in data.split(b"\n") if line.startswith(b"data")]
        with pytest.raises(IndexError):
            raw.line(3)

    @pytest.mark.parametrize(
        ("data", "expected"),
        [
            # 3 LFs a block on average, but one block has no data and the other two data lines
            (b"event: a\n\nevent: b\ndata: 1\ndata: 2\n\n", [("b", b"1\n2", 4)]),
            (b"event: b\ndata: 1\ndata: 2\n\nevent: a\n\n", [("b", b"1\n2", 2)]),
            # an empty data line is an event with empty data (WHATWG), not a missing one
            (b"event: a\ndata: \n\nevent: b\ndata: 2\n\n", [("a", b"", 2), ("b", b"2", 5)]),
        ],
        ids=["dataless-then-two-lines", "two-lines-then-dataless", "empty-data"],
    )
    def test_blocks_that_only_look_uniform_take_the_checked_path(
        self, data: bytes, expected: list[tuple[str, bytes, int]]
    ) -> None:
        assert _tuples(SSEParser().feed_raw(data)) == expected

    def test_an_event_cut_by_the_chunk_boundary_continues(self) -> None:
        # the first block of the second chunk continues an event begun in the first one
        parser = SSEParser()
        assert parser.feed(b"event: x\ndata: 1\n") == []
        assert parser.feed(b"data: 2\n\nevent: y\ndata: 3\n\n") == [E("x", "1\n2"), E("y", "3")]


class TestLimits:
    def test_line_at_the_limit_passes_and_one_over_fails(self) -> None:
        assert parse(b"data: " + b"x" * 10 + b"\n\n", max_line_bytes=16) == [E("message", "x" * 10)]
        data = b"data: ok\n\ndata: " + b"x" * 11 + b"\n\n"
        for chunks in ([data], bytewise(data), chunked(data, [12, 20])):
            events, error = run(lambda: SSEParser(max_line_bytes=16), chunks)
            assert events == [E("message", "ok")]
            assert error == "StreamProtocolError: SSE line longer than 16 bytes (line 3)"

    def test_a_line_that_never_ends_fails_before_it_ends(self) -> None:
        parser = SSEParser(max_line_bytes=64)
        parser.feed(b"data: ")
        with pytest.raises(StreamProtocolError, match=r"longer than 64 bytes \(line 1\)"):
            for _ in range(100):
                parser.feed(b"x")

    def test_event_data_over_the_limit(self) -> None:
        ok = b"data: 12345\ndata: 1234\n\n"  # 5 + 1 + 4 = 10 bytes of data
        assert parse(ok, max_event_bytes=10) == [E("message", "12345\n1234")]
        bad = b"data: a\n\ndata: 12345\ndata: 12345\n\n"
        for chunks in ([bad], bytewise(bad)):
            events, error = run(lambda: SSEParser(max_event_bytes=10), chunks)
            assert events == [E("message", "a")]
            assert error == "StreamProtocolError: SSE event data longer than 10 bytes (line 4)"

    @pytest.mark.parametrize("size", [10, 45, 58, 59], ids=["short-run", "near", "at", "over"])
    def test_a_run_of_uniform_blocks_is_held_to_the_limit_through_feed_raw(self, size: int) -> None:
        # the decoders' path takes a run of same-shaped blocks at once, unless one is too long
        # (10: the whole run is within the limit; 45: only each block is; 58: the data line is
        # exactly at it; 59: the line is over it)
        limit = 64
        blocks = [b"event: e\ndata: " + b"x" * size, b"event: e\ndata: y"]
        data = b"\n\n".join(blocks) + b"\n\n"
        parser = SSEParser(max_line_bytes=limit, max_event_bytes=limit)
        if len(b"data: ") + size <= limit:
            raw = parser.feed_raw(data)
            assert raw.payloads == [b"x" * size, b"y"]
        else:
            with pytest.raises(StreamProtocolError, match=r"longer than 64 bytes \(line 2\)"):
                parser.feed_raw(data)

    def test_errors_are_sticky(self) -> None:
        parser = SSEParser(max_line_bytes=8)
        assert parser.feed(b"data: a\n\ndata: 123456789\n\n") == [E("message", "a")]
        for _ in range(2):
            with pytest.raises(StreamProtocolError, match="line 3"):
                parser.feed(b"data: b\n\n")
        with pytest.raises(StreamProtocolError, match="line 3"):
            parser.close()

    def test_limits_must_be_positive(self) -> None:
        with pytest.raises(ConfigError):
            SSEParser(max_line_bytes=0)


# --- property tests ------------------------------------------------------------------------------

_values = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=6)
_lines = st.one_of(
    st.just(""),
    st.builds(lambda v: "data: " + v, _values),
    st.builds(lambda v: "data:" + v, _values),
    st.just("data"),
    st.builds(lambda v: "event: " + v, _values),
    st.builds(lambda v: "event:" + v, _values),
    st.builds(lambda v: "id: " + v, _values),
    st.sampled_from(
        ["id: a\0b", "retry: 250", "retry: 2x", ": comment", ":", "foo: bar", "\ufeffdata: x"]
    ),
)


@st.composite
def _streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_lines, max_size=14))
    ends = draw(
        st.lists(st.sampled_from(["\n", "\r", "\r\n"]), min_size=len(lines), max_size=len(lines))
    )
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    if draw(st.booleans()):
        text = "\ufeff" + text
    if draw(st.booleans()):
        text += draw(_lines)  # an unterminated last line
    return text.encode()


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=300, deadline=None)
@given(data=_streams(), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_any_stream_any_chunking_matches_the_oracle(data: bytes, cuts: list[int]) -> None:
    expected, starts = oracle_sse(data)
    chunks = chunked(data, cuts)
    assert run(SSEParser, chunks) == (expected, None)
    raw, error = run(_Raw, chunks)
    assert error is None
    assert [(name, data.decode(), line) for name, data, line in raw] == [
        (event.event, event.data, line) for event, line in zip(expected, starts, strict=True)
    ]


test_any_stream_any_chunking_matches_the_oracle_briefly = briefly(
    test_any_stream_any_chunking_matches_the_oracle, 60
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(st.tuples(st.sampled_from(["", "delta", "stop"]), _values), max_size=12),
    cuts=st.lists(st.integers(0, 300), max_size=10),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_provider_shaped_streams_under_random_splits(
    events: list[tuple[str, str]], cuts: list[int], end: str
) -> None:
    """The block fast path: ``event:``+``data:`` blocks, any chunking, same events as whole."""
    text = "".join(
        (f"event: {name}{end}" if name else "") + f"data: {value}{end}{end}"
        for name, value in events
    )
    data = text.encode()
    expected = [E(name or "message", value) for name, value in events]
    assert run(SSEParser, chunked(data, cuts)) == (expected, None)
    assert run(SSEParser, [data]) == (expected, None)


test_provider_shaped_streams_under_random_splits_briefly = briefly(
    test_provider_shaped_streams_under_random_splits, 50
)


_uniform_blocks = st.sampled_from(["data: {v}", "event: {n}\ndata: {v}"])
_near_misses = st.sampled_from(
    [
        "data:{v}",  # no space: the same event, but not the uniform shape
        "event: {n}",  # no data: nothing dispatched
        "event: {n}\ndata: {v}\ndata: {v}",
        "data: {v}\nevent: {n}",
        "event:{n}\ndata: {v}",
        "event: {n}\ndata:{v}",
        "id: {v}\ndata: {v}",
        ": {v}",
        "",  # a run of blank lines
        "datum: {v}",
        "events: {n}\ndata: {v}",
    ]
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(
        st.tuples(
            st.one_of(_uniform_blocks, _uniform_blocks, _uniform_blocks, _near_misses),
            st.sampled_from(["", "x", "{}", "delta", "event: y"]),
            _values,
        ),
        max_size=10,
    ),
    cuts=st.lists(st.integers(0, 200), max_size=3),
)
def test_nearly_uniform_chunks_match_the_oracle(
    blocks: list[tuple[str, str, str]], cuts: list[int]
) -> None:
    """Runs of provider-shaped blocks with a near miss or two among them: the uniform path
    takes only what it can prove, and names, data and line numbers match the oracle however
    the stream is cut."""
    data = "".join(shape.format(n=name, v=value) + "\n\n" for shape, name, value in blocks)
    raw_data = data.encode()
    expected, starts = oracle_sse(raw_data)
    wanted = [(e.event, e.data.encode(), line) for e, line in zip(expected, starts, strict=True)]
    for chunks in ([raw_data], _at_blank_lines(raw_data), chunked(raw_data, cuts)):
        assert run(_Raw, chunks) == (wanted, None)
        assert run(SSEParser, chunks) == (expected, None)


test_nearly_uniform_chunks_match_the_oracle_briefly = briefly(
    test_nearly_uniform_chunks_match_the_oracle, 60
)


def _at_blank_lines(data: bytes) -> list[bytes]:
    """``data`` cut after every ``\\n\\n``: one block per chunk where the stream has them (what
    a live stream sends, one event per network chunk)."""
    return chunked(data, [i + 2 for i in range(len(data)) if data.startswith(b"\n\n", i)])


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=300, deadline=None)
@given(data=_streams(), cuts=st.lists(st.integers(0, 400), max_size=3))
def test_a_stream_cut_at_its_blank_lines_matches_the_oracle(data: bytes, cuts: list[int]) -> None:
    """One block per chunk (the decoders' one-event path), with a few cuts elsewhere too."""
    expected, starts = oracle_sse(data)
    chunks = [piece for chunk in _at_blank_lines(data) for piece in chunked(chunk, cuts)]
    assert run(SSEParser, chunks) == (expected, None)
    raw, error = run(_Raw, chunks)
    assert error is None
    assert [(name, data.decode(), line) for name, data, line in raw] == [
        (event.event, event.data, line) for event, line in zip(expected, starts, strict=True)
    ]


test_a_stream_cut_at_its_blank_lines_matches_the_oracle_briefly = briefly(
    test_a_stream_cut_at_its_blank_lines_matches_the_oracle, 60
)


class TestOneBlockChunks:
    """Chunks that are each one whole block, through ``feed_raw``: the same events, names, line
    numbers and errors as the stream fed whole."""

    STREAM = (
        b"event: a\ndata: 1\n\n"
        b"data: 2\n\n"
        b": keep-alive\n\n"
        b"id: 7\nretry: 10\ndata: 3\n\n"
        b"event: b\ndata:\n\n"
        b"\n\n"
        b"data: x\ndata: y\n\n"
        b"event: c\ndata: 4\n\n"
    )

    def test_names_and_lines_match_the_whole_stream(self) -> None:
        whole = run(_Raw, [self.STREAM])
        assert run(_Raw, _at_blank_lines(self.STREAM)) == whole
        assert whole[0] == [
            ("a", b"1", 2),
            ("message", b"2", 4),
            ("message", b"3", 10),
            ("b", b"", 13),
            ("message", b"x\ny", 17),
            ("c", b"4", 21),
        ]

    def test_the_first_chunk_may_start_with_a_bom_or_follow_a_cr(self) -> None:
        for chunks in (
            [b"\xef\xbb\xbfdata: 1\n\n", b"data: 2\n\n"],
            [b"data: 1\r\r", b"\ndata: 2\n\n"],  # that LF ends the CR's line: no line of its own
            [b"data: 1\n", b"\n", b"data: 2\n\n"],
        ):
            assert run(_Raw, chunks)[0] == [("message", b"1", 1), ("message", b"2", 3)]

    def test_a_first_chunk_of_whole_blocks_and_what_may_come_before_it(self) -> None:
        blocks = b"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"
        wanted = [("a", b"1", 2), ("b", b"2", 5)]
        for chunks in (
            [blocks],
            [b"", blocks],
            [b"", b"\xef\xbb\xbf" + blocks],  # an empty chunk does not end the BOM's chance
            [b"\xef", b"\xbb\xbf" + blocks],
            [b"\xef\xbb\xbf" + blocks],
        ):
            assert run(_Raw, chunks) == (wanted, None)
        parser = SSEParser()
        parser.close_raw()
        with pytest.raises(ConfigError, match="after close"):
            parser.feed_raw(blocks)

    def test_a_block_continuing_an_event_of_the_previous_chunk(self) -> None:
        assert run(_Raw, [b"event: a\n", b"data: 1\n\n", b"data: 2\n\n"])[0] == [
            ("a", b"1", 2),
            ("message", b"2", 4),
        ]

    @pytest.mark.parametrize(
        ("limits", "block", "message"),
        [
            ({"max_line_bytes": 16}, b"data: " + b"x" * 11, "SSE line longer than 16 bytes"),
            ({"max_event_bytes": 8}, b"data: " + b"x" * 9, "SSE event data longer than 8 bytes"),
        ],
    )
    def test_a_block_over_a_limit_fails_on_its_line(
        self, limits: dict[str, int], block: bytes, message: str
    ) -> None:
        good = b"event: a\ndata: 1\n\n"
        chunks = [good, block + b"\n\n", good]
        events, error = run(lambda: _Raw(**limits), chunks)
        assert events == [("a", b"1", 2)]
        assert error == f"StreamProtocolError: {message} (line 4)"
        assert run(lambda: _Raw(**limits), [b"".join(chunks)]) == (events, error)
        # at the limit: accepted
        fits = block[:-1] + b"\n\n"
        assert run(lambda: _Raw(**limits), [good, fits])[1] is None


class _Raw:
    """``feed_raw`` / ``close_raw`` under the names :func:`run` calls."""

    def __init__(self, **limits: int) -> None:
        self.parser = SSEParser(**limits)

    def feed(self, data: bytes) -> list[tuple[str, bytes, int]]:
        return _tuples(self.parser.feed_raw(data))

    def close(self) -> list[tuple[str, bytes, int]]:
        return _tuples(self.parser.close_raw())


def _tuples(raw: RawEvents) -> list[tuple[str, bytes, int]]:
    return [(raw.name(i), raw.payloads[i], raw.line(i)) for i in range(len(raw))]


class TestEdges:
    def test_partial_line_over_the_limit_after_complete_events(self) -> None:
        parser = SSEParser(max_line_bytes=16)
        assert parser.feed(b"data: a\n\n" + b"x" * 20) == [E("message", "a")]
        with pytest.raises(StreamProtocolError, match=r"longer than 16 bytes \(line 3\)"):
            parser.feed(b"\n\n")

    @pytest.mark.parametrize(
        "data",
        [
            b"data: a\n\nfoo: b\n\ndata: c\n\n",
            b"event: x\ndata: a\n\nfoo: b\nbar\n\n",
            b"event: x\ndata: a\n\nevent: y\nid: 7\n\n",
        ],
        ids=["data-blocks", "event-blocks", "event-block-without-data"],
    )
    def test_an_irregular_block_among_regular_ones(self, data: bytes) -> None:
        expected = oracle_sse(data)[0]
        assert parse(data) == expected
        assert run(_Raw, [data])[0] == [
            (e.event, e.data.encode(), line)
            for e, line in zip(expected, oracle_sse(data)[1], strict=True)
        ]


# --- token soup: any bytes the parser's fast paths can be confused by -----------------------------

_TOKENS = st.sampled_from(
    [
        b"data",
        b"data:",
        b"data: ",
        b"event",
        b"event: ",
        b"id: ",
        b"retry: ",
        b"12",
        b"x",
        b"{}",
        b":",
        b" ",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"\r\r",
        b"\r\n\r\n",
        "é".encode(),
        "😀".encode(),
        "\u2028".encode(),
        b"\x00",
        b"\xef\xbb\xbf",  # a BOM: dropped only at the very start
        b": comment",
        b"data: a\n\n",
        b"event: e\ndata: d\n\n",
    ]
)


@st.composite
def _soups(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A stream glued from field names, values, line ends of every kind and whole blocks, and a
    chunking of it: random, at its blank lines (one block per chunk), at every line end or colon
    (a cut inside a CRLF, right after ``data:``), or byte by byte (inside every character)."""
    data = b"".join(draw(st.lists(_TOKENS, max_size=30)))
    how = draw(st.sampled_from(["random", "blocks", "line-ends", "bytes"]))
    if how == "random":
        cuts = draw(st.lists(st.integers(0, len(data)), max_size=6))
    elif how == "blocks":
        cuts = [i + 2 for i in range(len(data)) if data.startswith(b"\n\n", i)]
    elif how == "line-ends":
        cuts = [i + 1 for i in range(len(data)) if data[i] in b"\r\n:"]
    else:
        cuts = list(range(len(data)))
    return data, chunked(data, cuts)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=500, deadline=None)
@given(soup=_soups())
def test_token_soup_matches_the_oracle_through_both_paths(soup: tuple[bytes, list[bytes]]) -> None:
    data, chunks = soup
    expected, starts = oracle_sse(data)
    assert run(SSEParser, chunks) == (expected, None)
    assert run(_Raw, chunks) == (
        [(e.event, e.data.encode(), line) for e, line in zip(expected, starts, strict=True)],
        None,
    )


test_token_soup_matches_the_oracle_through_both_paths_briefly = briefly(
    test_token_soup_matches_the_oracle_through_both_paths, 60
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=400, deadline=None)
@given(
    soup=_soups(),
    max_line=st.sampled_from([4, 8, 12, 1 << 20]),
    max_event=st.sampled_from([1, 4, 8, 16, 1 << 20]),
)
def test_under_tight_limits_events_and_error_do_not_depend_on_the_chunking(
    soup: tuple[bytes, list[bytes]], max_line: int, max_event: int
) -> None:
    """With limits a stream breaks, the events before the error and the error itself (its line
    number included) are the same whole or cut up, and the same through ``feed`` and
    ``feed_raw``."""
    data, chunks = soup
    limits = {"max_line_bytes": max_line, "max_event_bytes": max_event}
    whole = run(lambda: SSEParser(**limits), [data])
    assert run(lambda: SSEParser(**limits), chunks) == whole
    raw_whole = run(lambda: _Raw(**limits), [data])
    assert run(lambda: _Raw(**limits), chunks) == raw_whole
    assert [(name, payload) for name, payload, _ in raw_whole[0]] == [
        (e.event, e.data.encode()) for e in whole[0]
    ]
    assert raw_whole[1] == whole[1]


test_under_tight_limits_events_and_error_do_not_depend_on_the_chunking_briefly = briefly(
    test_under_tight_limits_events_and_error_do_not_depend_on_the_chunking, 60
)
