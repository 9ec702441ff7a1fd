"""Loading scenarios: every accepted source form, the defaults, and bad input named by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from rxturn.errors import ConfigError
from rxturn.testing import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_SCENARIO,
    Entry,
    FakeProvider,
    Scenario,
    ScenarioToolCall,
    ScenarioUsage,
    load_scenario,
)

SPEC_EXAMPLE: dict[str, Any] = {  # docs/fake-provider.md's example, plus delay_ms
    "models": {
        "primary": [
            {"status": 529, "retry_after": 0.01},
            {"text": "Hello world", "drop_after_events": 3},
            {"text": "Hello world", "chunk_chars": 4, "delay_ms": 0},
        ],
        "*": [{"text": "ok", "usage": {"input_tokens": 5, "output_tokens": 1}}],
    }
}


def test_spec_example_loads() -> None:
    scenario = load_scenario(SPEC_EXAMPLE)
    primary = scenario.models["primary"]
    assert primary[0].status == 529 and primary[0].retry_after == 0.01
    assert primary[1].drop_after_events == 3
    assert primary[2].chunk_chars == 4
    assert scenario.models["*"][0].usage == ScenarioUsage(input_tokens=5, output_tokens=1)


def test_every_source_form_gives_the_same_scenario(tmp_path: Path) -> None:
    text = msgspec.json.encode(SPEC_EXAMPLE)
    path = tmp_path / "scenario.json"
    path.write_bytes(text)
    expected = load_scenario(SPEC_EXAMPLE)
    assert load_scenario(text) == expected
    assert load_scenario(text.decode()) == expected
    assert load_scenario(path) == expected
    assert load_scenario(str(path)) == expected
    assert load_scenario(expected) == expected


def test_defaults() -> None:
    entry = load_scenario({"models": {"*": [{}]}}).models["*"][0]
    assert entry.chunk_chars == DEFAULT_CHUNK_CHARS == 8
    assert entry.usage is msgspec.UNSET  # absent: deterministic counts
    assert entry.resolved_stop_reason == "end_turn"
    assert (entry.status, entry.delay_ms, entry.stall_seconds) == (None, 0.0, None)
    with_tools = load_scenario({"models": {"*": [{"tool_calls": [{"name": "t"}]}]}})
    call = with_tools.models["*"][0].tool_calls[0]
    assert call == ScenarioToolCall(name="t", input={}, id=None)
    assert with_tools.models["*"][0].resolved_stop_reason == "tool_call"


def test_explicit_null_usage_is_kept_apart_from_absent() -> None:
    entry = load_scenario({"models": {"*": [{"usage": None}]}}).models["*"][0]
    assert entry.usage is None


def test_default_scenario_is_the_documented_greeting() -> None:
    assert (
        load_scenario({"models": {"*": [{"text": "Hello from the rxturn fake provider."}]}})
        == DEFAULT_SCENARIO
    )


def test_a_hand_built_scenario_is_validated_by_the_provider() -> None:
    bad = Scenario(models={"m": (Entry(chunk_chars=0),)})
    with pytest.raises(ConfigError, match=r"models\.m\[0\]\.chunk_chars: expected int >= 1"):
        FakeProvider(bad)


BAD: list[tuple[Any, str]] = [
    (
        {"models": {"primary": [{"text": "a"}, {"chunk_chars": 0}]}},
        "models.primary[1].chunk_chars: expected int >= 1",
    ),
    ({"models": {"primary": [{"txt": "a"}]}}, "models.primary[0]: unknown field 'txt'"),
    ({"models": {"primary": [{"text": 5}]}}, "models.primary[0].text: expected str, got int"),
    (
        {"models": {"primary": [{"delay_ms": -1}]}},
        "models.primary[0].delay_ms: expected float >= 0",
    ),
    (
        {"models": {"primary": [{"stall_after_events": -1}]}},
        "models.primary[0].stall_after_events: expected int >= 0",
    ),
    (
        {"models": {"primary": [{"drop_after_events": 1.5}]}},
        "models.primary[0].drop_after_events: expected int",
    ),
    ({"models": {"primary": []}}, "models.primary: expected a non-empty list"),
    ({"models": {"primary": "x"}}, "models.primary: expected array"),
    ({"models": {"primary": [{"status": 200}]}}, "models.primary[0].status: expected int >= 400"),
    ({"models": {"primary": [{"status": 600}]}}, "models.primary[0].status: expected int <= 599"),
    ({"models": {"primary": [{"retry_after": 1}]}}, "models.primary[0]: retry_after needs status"),
    (
        {"models": {"primary": [{"status": 429, "retry_after": -1}]}},
        "models.primary[0].retry_after: expected float >= 0",
    ),
    (
        {"models": {"primary": [{"stall_seconds": 1}]}},
        "models.primary[0]: stall_seconds needs stall_after_events",
    ),
    (
        {"models": {"primary": [{"error_type": "x"}]}},
        "models.primary[0]: error_type needs status or error_event_after_events",
    ),
    (
        {"models": {"primary": [{"stop_reason": "tool_use"}]}},
        "models.primary[0].stop_reason: invalid value 'tool_use'",
    ),
    (
        {"models": {"primary": [{"tool_calls": [{"input": {}}]}]}},
        "models.primary[0].tool_calls[0]: missing required field 'name'",
    ),
    (
        {"models": {"primary": [{"tool_calls": [{"name": "t", "input": [1]}]}]}},
        "models.primary[0].tool_calls[0].input: expected object, got array",
    ),
    (
        {"models": {"*": [{"usage": {"input_tokens": 1}}]}},
        "models['*'][0].usage: missing required field 'output_tokens'",
    ),
    (
        {"models": {"*": [{"usage": {"input_tokens": 1, "output_tokens": -1}}]}},
        "models['*'][0].usage.output_tokens: expected int >= 0",
    ),
    ({"models": {}}, "models: expected a non-empty object"),
    ({"models": []}, "models: expected a non-empty object"),
    ({}, "missing required field 'models'"),
    ({"models": {"*": [{}]}, "extra": 1}, "unknown field 'extra'"),
    (b"[1]", "expected an object, got list"),
    ('{"models": {', "scenario: invalid JSON"),
    # before, a TypeError from Path(): 'expected str, bytes or os.PathLike object, not int'
    (5, "scenario: expected a dict, JSON text or bytes, a file path or a Scenario, got int"),
    (None, "a file path or a Scenario, got NoneType"),
]


@pytest.mark.parametrize(("src", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_scenarios_name_the_field(src: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_scenario(src)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match=r"nope\.json"):
        load_scenario(missing)


def test_bad_json_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"models": {"*": [ {"text": "x"} ] ')
    with pytest.raises(ConfigError, match=r"broken\.json.*invalid JSON"):
        load_scenario(path)


_DAY_MS = 86_400_000.0

OUT_OF_RANGE: list[tuple[dict[str, Any], str]] = [
    # a duration no test means: a typo (an extra zero run), or seconds written in milliseconds
    ({"delay_ms": _DAY_MS + 1}, "models.m[0].delay_ms: expected float <= 86400000"),
    ({"delay_ms": float("inf")}, "models.m[0].delay_ms: expected float <= 86400000"),
    ({"delay_ms_max": 1e300}, "models.m[0].delay_ms_max: expected float <= 86400000"),
    ({"first_content_delay_ms": 1e12}, "first_content_delay_ms: expected float <= 86400000"),
    ({"status": 429, "retry_after": 1e300}, "models.m[0].retry_after: expected float <= 86400"),
    ({"status": 429, "retry_after": float("inf")}, "retry_after: expected float <= 86400"),
    (
        {"stall_after_events": 1, "stall_seconds": 1e308},
        "models.m[0].stall_seconds: expected float <= 86400",
    ),
    ({"chunk_chars": 10**26}, "models.m[0].chunk_chars: expected int <= 1000000000"),
    ({"drop_after_events": 10**23}, "models.m[0].drop_after_events: expected int <= 1000000000"),
]


@pytest.mark.parametrize(("entry", "message"), OUT_OF_RANGE, ids=[m for _, m in OUT_OF_RANGE])
def test_a_number_beyond_any_test_is_refused(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"m": [entry]}})
    assert message in str(info.value)


def test_the_bounds_themselves_load() -> None:
    error, reply = load_scenario(
        {
            "models": {
                "m": [
                    {"delay_ms": _DAY_MS, "status": 429, "retry_after": 86_400},
                    {"chunk_chars": 1_000_000_000, "drop_after_events": 1_000_000_000},
                ]
            }
        }
    ).models["m"]
    assert (error.delay_ms, error.retry_after) == (_DAY_MS, 86_400)
    assert (reply.chunk_chars, reply.drop_after_events) == (1_000_000_000, 1_000_000_000)


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"seconds": float("inf")}, "rate_limit_windows[0].seconds: expected float <= 86400"),
        (
            {"seconds": 1, "after_s": 1e300},
            "rate_limit_windows[0].after_s: expected float <= 86400",
        ),
        (
            {"seconds": 1, "retry_after": 1e9},
            "rate_limit_windows[0].retry_after: expected float <= 86400",
        ),
    ],
)
def test_a_rate_limit_window_beyond_a_day_is_refused(window: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"*": [{}]}, "rate_limit_windows": [window]})
    assert message in str(info.value)


def test_a_key_written_twice_is_refused(tmp_path: Path) -> None:
    """JSON text keeps the last of two equal keys: a pasted entry that still holds the old
    fault would silently script the wrong reply."""
    text = '{"models": {"m": [{"text": "first", "status": 500, "text": "second"}]}}'
    with pytest.raises(ConfigError, match=r"^scenario: duplicate key 'text'$"):
        load_scenario(text)
    path = tmp_path / "twice.json"
    path.write_text('{"models": {"m": [{}]}, "models": {"n": [{}]}}')
    with pytest.raises(ConfigError, match=r"twice\.json': duplicate key 'models'$"):
        load_scenario(path)


def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + msgspec.json.encode(SPEC_EXAMPLE))
    assert load_scenario(path) == load_scenario(SPEC_EXAMPLE)


def test_a_path_with_a_nul_byte_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="scenario file"):
        load_scenario("scenario\x00.json")


UNSENDABLE: list[tuple[dict[str, Any], str]] = [
    # a lone surrogate: no JSON reply can carry it (every request got a 500 and a traceback)
    ({"text": "a\ud800b"}, "models.m[0].text: not valid UTF-8 (a lone surrogate, '\\ud800')"),
    ({"thinking": "\udcff"}, "models.m[0].thinking: not valid UTF-8"),
    ({"tool_calls": [{"name": "f\ud800"}]}, "models.m[0].tool_calls[0].name: not valid UTF-8"),
    (
        {"tool_calls": [{"name": "f", "input": {"k": ["\ud800"]}}]},
        "models.m[0].tool_calls[0].input.k[0]: not valid UTF-8",
    ),
    (
        {"status": 400, "error_message": "\ud800"},
        "models.m[0].error_message: not valid UTF-8",
    ),
    ({"text": "x", "raw_usage": {"\ud800": 1}}, "models.m[0].raw_usage['\\ud800']: not valid"),
    # no JSON number: it went out as null, silently
    (
        {"tool_calls": [{"name": "f", "input": {"x": float("nan")}}]},
        "models.m[0].tool_calls[0].input.x: expected a finite number, got nan",
    ),
    (
        {"text": "x", "raw_usage": {"input_tokens": float("inf")}},
        "models.m[0].raw_usage.input_tokens: expected a finite number, got inf",
    ),
    # no JSON value: an object was a 500 and a traceback on every request, a set went out as
    # an array and bytes as a base64 string, silently
    ({"text": "x", "raw_usage": {"n": object()}}, "models.m[0].raw_usage.n: expected a JSON"),
    (
        {"tool_calls": [{"name": "f", "input": {"k": {1, 2}}}]},
        "models.m[0].tool_calls[0].input.k: expected a JSON value, got set",
    ),
    (
        {"tool_calls": [{"name": "f", "input": {"k": [b"raw"]}}]},
        "models.m[0].tool_calls[0].input.k[0]: expected a JSON value, got bytes",
    ),
    (
        {"tool_calls": [{"name": "f", "input": {"k": {1: "one"}}}]},
        "models.m[0].tool_calls[0].input.k[1]: expected a string key, got int",
    ),
    # an int past the 4300 digits Python writes: every request was a 500 and a traceback
    (
        {"text": "x", "raw_usage": {"input_tokens": 10**5000}},
        "models.m[0].raw_usage.input_tokens: expected an integer Python writes (4300 digits at "
        "most), got an integer of about 5001 digits",
    ),
    (
        {"tool_calls": [{"name": "f", "input": {"k": [10**5000]}}]},
        "models.m[0].tool_calls[0].input.k[0]: expected an integer Python writes",
    ),
    (
        {"usage": {"input_tokens": 10**5000, "output_tokens": 1}},
        "models.m[0].usage.input_tokens: expected an integer Python writes",
    ),
    # msgspec's "- at `key` in `$[0]...`" was left unparsed: "scenario models.m: expected str,
    # got int - at key in $[0].tool_calls[0].input"
    (
        {"tool_calls": [{"name": "f", "input": {1: "one"}}]},
        "scenario models.m[0].tool_calls[0].input: a key: expected str, got int",
    ),
]


@pytest.mark.parametrize(("entry", "message"), UNSENDABLE, ids=[m for _, m in UNSENDABLE])
def test_what_no_reply_can_carry_is_refused_at_load(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"m": [entry]}})
    assert message in str(info.value)


def test_a_hand_built_scenario_holding_no_json_value_is_named_by_its_field() -> None:
    # msgspec.to_builtins raised a bare TypeError ('Encoding objects of type object is
    # unsupported') and turned bytes into base64 without a word
    for value, kind in ((object(), "object"), (b"\x00", "bytes")):
        scenario = Scenario(models={"m": (Entry(text="x", raw_usage={"n": value}),)})
        with pytest.raises(ConfigError) as info:
            FakeProvider(scenario)
        assert (
            str(info.value)
            == f"scenario models.m[0].raw_usage.n: expected a JSON value, got {kind}"
        )


def test_a_dict_nested_deeper_than_any_reply_is_a_config_error() -> None:
    nested: dict[str, Any] = {}
    inner = nested
    for _ in range(5000):  # (a RecursionError escaped)
        inner["k"] = {}
        inner = inner["k"]
    with pytest.raises(ConfigError, match=r"^scenario models.m: nested too deeply$"):
        load_scenario({"models": {"m": [{"text": "x", "raw_usage": nested}]}})


REPLY_BESIDE_STATUS: list[dict[str, Any]] = [
    {"text": "never sent"},
    {"thinking": "t"},
    {"tool_calls": [{"name": "f"}]},
    {"stop_reason": "max_tokens"},
    {"usage": None},
    {"usage": {"input_tokens": 1, "output_tokens": 1}},
    {"drop_after_events": 0},
    {"stall_after_events": 1},
    {"malformed_after_events": 1},
    {"error_event_after_events": 1},
    {"first_content_delay_ms": 5},
]


@pytest.mark.parametrize(
    "reply", REPLY_BESIDE_STATUS, ids=[next(iter(r)) for r in REPLY_BESIDE_STATUS]
)
def test_a_reply_key_beside_status_is_refused(reply: dict[str, Any]) -> None:
    # an HTTP error carries none of it: it loaded, and went unused without a word
    (name,) = reply
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"m": [{"status": 503, **reply}]}})
    assert str(info.value) == (
        f"scenario models.m[0]: {name} needs a reply, not an HTTP error (status)"
    )


def test_what_an_http_error_may_carry_loads() -> None:
    entry = {
        "status": 529,
        "retry_after": 1,
        "error_type": "overloaded_error",
        "error_message": "busy",
        "delay_ms": 5,
        "delay_ms_max": 9,
        "chunk_chars": 3,
        "text": "",  # the unscripted values themselves
        "first_content_delay_ms": 0,
    }
    assert load_scenario({"models": {"m": [entry]}}).models["m"][0].status == 529


def test_an_unknown_key_holding_a_newline_is_named_on_one_line() -> None:
    # was "scenario models.m[0]: object contains unknown field a" and "b" on a second line
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"m": [{"text\nx": "hi"}]}})
    assert str(info.value) == "scenario models.m[0]: unknown field 'text\\nx'"


def test_an_empty_path_is_named_as_such() -> None:
    # Path("") is the current directory: "scenario file '.': Is a directory"
    with pytest.raises(ConfigError, match=r"^scenario: expected a file name, got ''$"):
        load_scenario("")


def test_a_file_beyond_the_bound_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a path with no end (/dev/zero) took the machine's memory: 'internal error: MemoryError'
    from rxturn.testing import _scenario

    text = b'{"models": {"*": [{"text": "x"}]}}'
    path = tmp_path / "scenario.json"
    path.write_bytes(text)
    monkeypatch.setattr(_scenario, "MAX_SCENARIO_BYTES", len(text))
    assert load_scenario(path).models["*"][0].text == "x"  # the bound itself loads
    path.write_bytes(text + b" ")
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"scenario file {str(path)!r}: larger than {len(text)} bytes, "
        "the most a scenario file holds"
    )


FILE_TEXT: list[tuple[str, str]] = [
    # msgspec's own words named no field: "Number out of range - at `$[...][...][0][...]`",
    # "Input data was truncated"
    ('{"delay_ms": 1e400}', "scenario models.m[0].delay_ms: expected float <= 86400000"),
    (
        '{"text": "x", "raw_usage": {"input_tokens": 1e400}}',
        "scenario models.m[0].raw_usage.input_tokens: expected a finite number, got inf",
    ),
    ('{"text": "\\ud800"}', "scenario models.m[0].text: not valid UTF-8"),
    (
        '{"delay_ms": NaN}',
        "invalid JSON: JSON is malformed: invalid character (byte 31) (NaN is not a JSON number)",
    ),
    ('{"text": "\\ud800", "text": "b"}', "duplicate key 'text'"),
]


@pytest.mark.parametrize(("entry", "message"), FILE_TEXT, ids=[e for e, _ in FILE_TEXT])
def test_json_msgspec_refuses_is_named_by_its_field(
    entry: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "scenario.json"
    path.write_text('{"models": {"m": [' + entry + "]}}")
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# A value of the wrong JSON type for every entry key of docs/fake-provider.md's table.
WRONG_TYPE: dict[str, Any] = {
    "text": 1,
    "thinking": [],
    "tool_calls": {},
    "stop_reason": 3,
    "usage": "x",
    "chunk_chars": "8",
    "delay_ms": "0",
    "delay_ms_max": [],
    "status": "429",
    "retry_after": "1",
    "error_type": 5,
    "error_message": False,
    "drop_after_events": 1.5,
    "stall_after_events": "1",
    "stall_seconds": {},
    "malformed_after_events": True,
    "error_event_after_events": [1],
    "raw_usage": [],
    "first_content_delay_ms": "1",
}


def test_every_documented_entry_key_has_a_wrong_type_checked_below() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "fake-provider.md").read_text()
    table = doc.split("## Entry keys", 1)[1].split("Details worth knowing", 1)[0]
    keys = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert keys == set(WRONG_TYPE)


@pytest.mark.parametrize("key", WRONG_TYPE)
def test_a_wrong_type_in_any_entry_key_of_a_file_is_one_line_naming_key_and_entry(
    key: str, tmp_path: Path
) -> None:
    path = tmp_path / "scenario.json"
    entries = [{"text": "fine"}, {key: WRONG_TYPE[key]}]
    path.write_text(msgspec.json.encode({"models": {"primary": entries}}).decode())
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    said = str(info.value)
    assert said.startswith(f"scenario models.primary[1].{key}: expected ")
    assert "\n" not in said


def test_a_scenario_type_inside_a_dict_is_checked_field_by_field() -> None:
    # msgspec.convert takes an instance of its target type as it is: a window of -1 s with
    # status 200 and a NaN Retry-After loaded; an Entry was "expected a JSON value, got Entry"
    from rxturn.testing._scenario import RateLimitWindow

    window = RateLimitWindow(seconds=-1)
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"m": [{}]}, "rate_limit_windows": [window]})
    assert str(info.value) == "scenario rate_limit_windows[0].seconds: expected float > 0.0"
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {"m": [Entry(chunk_chars=0)]}})
    assert str(info.value) == "scenario models.m[0].chunk_chars: expected int >= 1"
    usage = ScenarioUsage(input_tokens=3, output_tokens=2)
    mixed = {"models": {"m": [Entry(text="hi", usage=usage)]}}
    plain = {"models": {"m": [{"text": "hi", "usage": {"input_tokens": 3, "output_tokens": 2}}]}}
    assert load_scenario(mixed) == load_scenario(plain)


def test_a_hand_built_scenario_nested_too_deeply_is_a_config_error() -> None:
    nested: dict[str, Any] = {}
    inner = nested
    for _ in range(5000):  # (a RecursionError escaped, where the dict form was named)
        inner["k"] = {}
        inner = inner["k"]
    scenario = Scenario(models={"m": (Entry(text="x", raw_usage=nested),)})
    with pytest.raises(ConfigError, match=r"^scenario models.m: nested too deeply$"):
        load_scenario(scenario)


@pytest.mark.parametrize("name", ["claude-*", "*-mini", "**", "* "])
def test_a_star_in_a_model_name_is_not_a_pattern_and_is_refused(name: str) -> None:
    # it loaded as a literal name no request asks for: "claude-3" got the 404 (or "*")
    with pytest.raises(ConfigError) as info:
        load_scenario({"models": {name: [{"text": "never"}], "*": [{}]}})
    assert str(info.value).startswith(f"scenario models[{name!r}]: '*' is a pattern only as")


LATIN_1 = '{"models": {"m": [{"text": "café"}]}}'.encode("latin-1")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        # Python's parser reads UTF-16 from bytes: the file loaded
        (
            '{"models": {"m": [{}]}}'.encode("utf-16"),
            "starts with a UTF-16 byte order mark: the file is UTF-16 text; save it as UTF-8",
        ),
        (
            LATIN_1,
            f"not UTF-8 text (byte 0xe9 at offset {LATIN_1.index(0xE9)})",
        ),
    ],
    ids=["utf-16", "latin-1"],
)
def test_a_file_that_is_not_utf8_is_named_so(tmp_path: Path, data: bytes, said: str) -> None:
    path = tmp_path / "scenario.json"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert str(info.value) == f"scenario file {str(path)!r}: {said}"


def test_json_text_keeping_a_byte_order_mark_loads() -> None:
    # read_text() of a file saved with a BOM keeps it: the text was taken for a file name
    text = '\ufeff{"models": {"m": [{"text": "hi"}]}}'
    assert load_scenario(text).models["m"][0].text == "hi"


def test_a_set_of_rate_limit_windows_is_no_json_value() -> None:
    # msgspec takes a set for a list: the windows loaded in no order, and unchecked
    from rxturn.testing._scenario import RateLimitWindow

    for windows in ({RateLimitWindow(seconds=-1)}, frozenset({RateLimitWindow(seconds=1)})):
        with pytest.raises(ConfigError) as info:
            load_scenario({"models": {"m": [{}]}, "rate_limit_windows": windows})
        kind = type(windows).__name__
        assert str(info.value) == f"scenario rate_limit_windows: expected a JSON value, got {kind}"
