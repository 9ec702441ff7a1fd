"""The usage mappings on arbitrary JSON: a Usage, None, or the typed error — never a crash."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from usage_oracle import anthropic_expected, chat_expected, responses_expected

from rxturn.errors import StreamProtocolError
from rxturn.messages import Usage
from rxturn.wire._usage import (
    anthropic_usage,
    merge_anthropic_delta,
    openai_chat_usage,
    responses_usage,
    usage_object,
)

_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.integers(-(10**400), 10**400),  # JSON integers past any float (msgspec keeps them exact)
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)
_json: Any = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    [
        "input_tokens",
        "output_tokens",
        "prompt_tokens",
        "completion_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cache_creation",
        "prompt_tokens_details",
        "input_tokens_details",
        "output_tokens_details",
        "cost",
        "other",
    ]
)
_usage_like = st.one_of(_json, st.dictionaries(_keys, _json, max_size=6))


@pytest.mark.slow  # a fuzz: 300 arbitrary JSON pairs (2-3 s)
@settings(max_examples=300, deadline=None)
@given(raw=_usage_like, delta=_usage_like)
def test_any_json_maps_to_usage_or_the_typed_error(raw: Any, delta: Any) -> None:
    for mapping in (openai_chat_usage, responses_usage, anthropic_usage):
        try:
            usage = mapping(raw)
        except StreamProtocolError as exc:
            assert "usage" in str(exc)
            continue
        assert usage is None or isinstance(usage, Usage)
        if usage is not None:
            assert usage.input_tokens >= 0 and usage.output_tokens >= 0
            assert all(v >= 0 for v in (usage.details or {}).values())
    if isinstance(raw, dict):
        with contextlib.suppress(StreamProtocolError):
            anthropic_usage(merge_anthropic_delta(dict(raw), delta))


@pytest.mark.parametrize("mapping", [openai_chat_usage, responses_usage, anthropic_usage])
@pytest.mark.parametrize("raw", [[1], "3", 7], ids=["list", "string", "number"])
def test_usage_that_is_no_object_is_the_typed_error(mapping: Any, raw: object) -> None:
    with pytest.raises(StreamProtocolError, match="usage: expected an object, got"):
        mapping(raw)


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        ({"output_tokens": 5}, {"input_tokens": 3, "output_tokens": 5, "service_tier": "s"}),
        (
            {"output_tokens": 5, "input_tokens": 9, "cache_read_input_tokens": None},
            {"input_tokens": 9, "output_tokens": 5, "service_tier": "s"},
        ),
        ({"input_tokens": 9}, {"input_tokens": 9, "output_tokens": None, "service_tier": "s"}),
        ({}, {"input_tokens": 3, "output_tokens": None, "service_tier": "s"}),
        (None, {"input_tokens": 3, "output_tokens": 1, "service_tier": "s"}),
    ],
    ids=["output-only", "with-input", "input-only", "empty", "null"],
)
def test_a_message_delta_usage_lays_its_fields_over_the_start(
    delta: object, expected: dict[str, object]
) -> None:
    start: dict[str, object] = {"input_tokens": 3, "output_tokens": 1, "service_tier": "s"}
    assert merge_anthropic_delta(start, delta) == expected
    assert start == {"input_tokens": 3, "output_tokens": 1, "service_tier": "s"}  # not changed


def test_a_usage_object_is_copied_and_anything_else_is_malformed() -> None:
    raw: dict[str, object] = {"input_tokens": 3}
    copied = usage_object(raw, "Anthropic")
    assert copied == raw and copied is not raw
    assert usage_object(None, "Anthropic") == {}
    with pytest.raises(StreamProtocolError, match=r"malformed Anthropic usage: expected an object"):
        usage_object([3], "Anthropic", "line 4")


@pytest.mark.parametrize("cost", [10**309, 10**400, -(10**400)], ids=["1e309", "1e400", "-1e400"])
def test_a_cost_too_big_for_a_float_is_no_cost(cost: int) -> None:
    """A provider's ``cost`` is read as a float; an integer past the largest float is no cost,
    as an infinite or negative one is (not an ``OverflowError`` ending the turn)."""
    for mapping, raw in (
        (openai_chat_usage, {"prompt_tokens": 1, "completion_tokens": 2, "cost": cost}),
        (responses_usage, {"input_tokens": 1, "output_tokens": 2, "cost": cost}),
    ):
        usage = mapping(raw)
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens, usage.provider_cost) == (1, 2, None)


def _mapped(mapping: Any, raw: dict[str, Any]) -> Usage | str | None:
    try:
        return mapping(raw)
    except StreamProtocolError as exc:
        return str(exc)


_count_like = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(2**40 - 1, 2**40 + 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.just(0.0),
)


@settings(max_examples=200, deadline=None)
@given(
    counts=st.dictionaries(
        st.sampled_from(
            [
                "input_tokens",
                "output_tokens",
                "prompt_tokens",
                "completion_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
                "total_tokens",
                "service_tier",
            ]
        ),
        _count_like,
        max_size=6,
    ),
    empty=st.sampled_from([None, 0, "", False, {}, []]),
)
def test_nested_objects_or_none_the_top_level_counts_map_alike(
    counts: dict[str, Any], empty: object
) -> None:
    """A usage with no nested object to look into maps its top-level counts (or names the
    malformed one) exactly as one whose nested objects hold nothing mapped; a nested key that
    is null, 0, "", false, {} or [] reads as absent."""
    for mapping, nested in (
        (anthropic_usage, ("output_tokens_details", "cache_creation")),
        (openai_chat_usage, ("prompt_tokens_details", "completion_tokens_details")),
        (responses_usage, ("input_tokens_details", "output_tokens_details")),
    ):
        plain = _mapped(mapping, counts)
        with_nothing_inside = _mapped(mapping, {**counts, nested[0]: {"unmapped": None}})
        assert plain == with_nothing_inside
        for key in nested:
            with_empty = _mapped(mapping, {**counts, key: empty})
            if isinstance(plain, Usage) and type(empty) is int:  # a whole 0: a detail
                assert isinstance(with_empty, Usage)
                assert with_empty.details == {**(plain.details or {}), key: 0}
                assert msgspec.structs.replace(with_empty, details=plain.details) == plain
            else:
                assert with_empty == plain


def test_a_malformed_top_level_count_is_named_with_or_without_nested_objects() -> None:
    for raw in (
        {"input_tokens": -1, "output_tokens": 2},
        {"input_tokens": -1, "output_tokens": 2, "output_tokens_details": {"thinking_tokens": 1}},
    ):
        with pytest.raises(StreamProtocolError, match=r"'input_tokens' is -1, not a token count"):
            anthropic_usage(raw)
    with pytest.raises(StreamProtocolError, match=r"'cache_creation.ephemeral_5m_input_tokens'"):
        anthropic_usage({"input_tokens": 1, "cache_creation": {"ephemeral_5m_input_tokens": "2"}})


class _Dumped:
    """What the usage oracle reads: an SDK usage object's ``model_dump()``."""

    def __init__(self, dump: dict[str, Any]) -> None:
        self._dump = dump

    def model_dump(self) -> dict[str, Any]:
        return self._dump


_COUNTED = {  # each wire's top-level counts and the nested objects that hold counts
    "anthropic": (
        ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
        {
            "cache_creation": ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"),
            "output_tokens_details": ("thinking_tokens",),
        },
    ),
    "chat": (
        ("prompt_tokens", "completion_tokens", "total_tokens"),
        {
            "prompt_tokens_details": ("cached_tokens", "cache_write_tokens", "audio_tokens"),
            "completion_tokens_details": ("reasoning_tokens", "audio_tokens"),
        },
    ),
    "responses": (
        ("input_tokens", "output_tokens", "total_tokens"),
        {
            "input_tokens_details": ("cached_tokens", "cache_write_tokens"),
            "output_tokens_details": ("reasoning_tokens",),
        },
    ),
}
_MAPPINGS = {
    "anthropic": (anthropic_usage, anthropic_expected),
    "chat": (openai_chat_usage, chat_expected),
    "responses": (responses_usage, responses_expected),
}
_a_count = st.one_of(st.none(), st.integers(0, 2**40))
_other_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(0, 2**40), st.text(max_size=3), st.floats(0, 10)
)
_other_keys = st.sampled_from(["a", "b", "web_search_requests", "image_tokens"])
_other = st.one_of(
    _other_leaf,
    st.dictionaries(_other_keys, _other_leaf, max_size=3),
    st.dictionaries(_other_keys, st.dictionaries(_other_keys, _other_leaf, max_size=2), max_size=2),
)


@st.composite
def _well_formed(draw: st.DrawFn, wire: str) -> dict[str, Any]:
    flat, nested = _COUNTED[wire]
    usage: dict[str, Any] = {}
    keys = draw(st.permutations([*flat, *nested, "service_tier", "server_tool_use", "other"]))
    for key in keys[: draw(st.integers(0, len(keys)))]:
        if key in flat:
            usage[key] = draw(_a_count)
        elif key in nested:
            inner: dict[str, Any] = {
                name: draw(_a_count) for name in nested[key] if draw(st.booleans())
            }
            inner.update(draw(st.dictionaries(_other_keys, _other, max_size=2)))
            usage[key] = draw(st.sampled_from([inner, None, {}]))
        else:
            usage[key] = draw(_other)
    return usage


@settings(max_examples=300, deadline=None)
@given(data=st.data(), wire=st.sampled_from(sorted(_COUNTED)))
def test_a_well_formed_usage_maps_as_documented(data: st.DataObject, wire: str) -> None:
    """Every mapped count, nested or not and in any key order, and every other whole-number
    count as a detail: what the documented mapping (the usage oracle) says."""
    raw = data.draw(_well_formed(wire))
    mapping, expected = _MAPPINGS[wire]
    assert mapping(raw) == expected(_Dumped(raw))


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    wire=st.sampled_from(sorted(_COUNTED)),
    bad=st.one_of(st.integers(-3, -1), st.just(2**40 + 1), st.booleans(), st.text(max_size=2)),
)
def test_the_one_malformed_count_is_named(data: st.DataObject, wire: str, bad: object) -> None:
    raw = data.draw(_well_formed(wire))
    flat, nested = _COUNTED[wire]
    paths = [name for name in flat if name != "total_tokens"]
    paths += [f"{head}.{name}" for head, names in nested.items() for name in names]
    path = data.draw(st.sampled_from(paths))
    head, _, rest = path.partition(".")
    if rest:
        inner = raw.get(head)
        raw[head] = {**(inner if isinstance(inner, dict) else {}), rest: bad}
    else:
        raw[head] = bad
    mapping, _ = _MAPPINGS[wire]
    with pytest.raises(StreamProtocolError, match=rf"'{path}' is .*, not a token count"):
        mapping(raw)


_DEEPSEEK = {
    "prompt_tokens": 1000,
    "completion_tokens": 100,
    "total_tokens": 1100,
    "prompt_cache_hit_tokens": 800,
    "prompt_cache_miss_tokens": 200,
}


@pytest.mark.parametrize(
    "extra",
    [{}, {"prompt_tokens_details": {"cached_tokens": 0}}],
    ids=["hits-only", "with-a-zero-cached-tokens"],
)
def test_deepseeks_cache_hits_are_the_cache_reads(extra: dict[str, Any]) -> None:
    # DeepSeek's prompt_tokens is its cache hits plus its misses: 800 of 1000 read from the
    # cache. They were a detail, and the reply was priced as if nothing was cached.
    assert openai_chat_usage({**_DEEPSEEK, **extra}) == Usage(
        input_tokens=1000,
        output_tokens=100,
        cache_read_tokens=800,
        details={"prompt_cache_miss_tokens": 200},
    )


def test_a_malformed_deepseek_cache_hit_count_is_named() -> None:
    with pytest.raises(StreamProtocolError, match="'prompt_cache_hit_tokens' is -8"):
        openai_chat_usage({**_DEEPSEEK, "prompt_cache_hit_tokens": -8})


# xAI's API reference usage: 32 in, 9 out, 94 of reasoning, 135 in all. Its reasoning is not part
# of its completion tokens (OpenAI's is): 32 + 9 + 94 = 135. The output was read as 9, the
# reasoning (billed as output) left out of the output total; it is 9 + 94 = 103.
@pytest.mark.parametrize(
    ("mapping", "raw"),
    [
        (
            openai_chat_usage,
            {
                "prompt_tokens": 32,
                "completion_tokens": 9,
                "total_tokens": 135,
                "prompt_tokens_details": {"cached_tokens": 6},
                "completion_tokens_details": {"reasoning_tokens": 94},
            },
        ),
        (
            responses_usage,
            {
                "input_tokens": 32,
                "output_tokens": 9,
                "total_tokens": 135,
                "input_tokens_details": {"cached_tokens": 6},
                "output_tokens_details": {"reasoning_tokens": 94},
            },
        ),
    ],
    ids=["chat", "responses"],
)
def test_reasoning_counted_apart_from_the_output_is_added_to_it(
    mapping: Any, raw: dict[str, Any]
) -> None:
    assert mapping(raw) == Usage(
        input_tokens=32, output_tokens=103, cache_read_tokens=6, output_reasoning_tokens=94
    )


@pytest.mark.parametrize("total", [135, None, "135", 200], ids=["sum", "none", "string", "other"])
def test_reasoning_inside_the_output_is_not_added_again(total: object) -> None:
    # OpenAI's way: 103 completion tokens of which 94 reasoning; a total_tokens that does not
    # say the reasoning was left out (absent, not a count, another sum) changes nothing
    raw = {
        "prompt_tokens": 32,
        "completion_tokens": 103,
        "total_tokens": total,
        "completion_tokens_details": {"reasoning_tokens": 94},
    }
    usage = openai_chat_usage(raw)
    assert usage == Usage(input_tokens=32, output_tokens=103, output_reasoning_tokens=94)


# xAI's usage carries what the request was billed, tools included, in ticks of 10**-10 USD
# (its cost-tracking guide: 37756000 ticks is $0.0037756). It was a detail, and the cost was
# genai-prices' figure for the tokens alone.
@pytest.mark.parametrize("mapping", [openai_chat_usage, responses_usage], ids=["chat", "resp"])
def test_xais_cost_in_ticks_is_the_providers_cost(mapping: Any) -> None:
    names = (
        ("prompt_tokens", "completion_tokens")
        if mapping is openai_chat_usage
        else ("input_tokens", "output_tokens")
    )
    raw = {names[0]: 199, names[1]: 1, "total_tokens": 200, "cost_in_usd_ticks": 37756000}
    assert mapping(raw) == Usage(input_tokens=199, output_tokens=1, provider_cost=0.0037756)


@pytest.mark.parametrize("ticks", [-1, 1.5, "37756000", True, None], ids=str)
def test_ticks_that_are_no_count_are_no_cost(ticks: object) -> None:
    raw = {"prompt_tokens": 199, "completion_tokens": 1, "cost_in_usd_ticks": ticks}
    assert openai_chat_usage(raw) == Usage(input_tokens=199, output_tokens=1)
