"""Usage objects as each wire sends them → :class:`~rxturn.messages.Usage`.

The decoders keep a wire's usage object as the JSON it is (a ``dict``, decoded once or twice per
stream, never per event) and fold it as that wire's official SDK does; the functions here then
map the folded object onto the canonical counts, once, in one place per wire:

============  ============================================================================
wire          mapping
============  ============================================================================
Anthropic     ``input_tokens`` = ``input_tokens + cache_creation_input_tokens +
              cache_read_input_tokens``; cache write / read from those two;
              ``cache_creation.ephemeral_5m_input_tokens`` / ``…_1h_…`` the TTL split (kept
              only when it adds up to the cache writes); ``output_tokens_details.
              thinking_tokens`` reasoning
OpenAI Chat   ``prompt_tokens`` / ``completion_tokens``; ``prompt_tokens_details.
              cached_tokens`` / ``cache_write_tokens`` / ``audio_tokens``;
              ``completion_tokens_details.reasoning_tokens`` / ``audio_tokens``; ``cost``
              (OpenRouter), else ``cost_in_usd_ticks`` (xAI) the provider's own cost;
              DeepSeek's ``prompt_cache_hit_tokens`` the cache reads when reported
Responses     ``input_tokens`` / ``output_tokens``; ``input_tokens_details.cached_tokens`` /
              ``cache_write_tokens``; ``output_tokens_details.reasoning_tokens``; ``cost``,
              else ``cost_in_usd_ticks``
Ollama        ``prompt_eval_count`` / ``eval_count`` (in the decoder itself)
============  ============================================================================

On both OpenAI wires, reasoning a provider counts apart from the output (xAI: 9 output, 94
reasoning, a ``total_tokens`` of input + 103) is added to the output, which is the total output
on every wire; ``total_tokens`` tells the two ways apart.

Every other whole-number count in the object lands in ``details`` under its dotted path
(``server_tool_use.web_search_requests``); strings, booleans, fractions, lists and ``total_tokens``
(a sum of what is already there) do not. A mapped count that is ``null`` or absent is not
reported (``None``); one that is not a whole number from 0 to 2**40 (negative, a string, a
fraction, absurdly large) is a :class:`~rxturn.errors.StreamProtocolError` naming the field: a
usage that cannot be trusted is not billed as if it could. An unknown field with such a value is
not a count and is left out.

A usage is read in one pass over its keys, the mapped counts and the details together (two
usages a stream: reading each field, then walking the object again for the details, cost
twice the calls); when a mapped count is malformed, the fields are then read in the mapping's
order, so the error names the first malformed one whatever the order of the object's keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import NoReturn

from ..errors import StreamProtocolError
from ..messages import Usage
from ._errors import shown

__all__ = [
    "MAX_COUNT",
    "Where",
    "anthropic_usage",
    "anthropic_usage_of",
    "checked_count",
    "merge_anthropic_delta",
    "openai_chat_usage",
    "responses_usage",
    "usage_object",
]

#: Counts above this are not believed: no request is a trillion tokens.
MAX_COUNT = 1 << 40
#: xAI's own figure for what a request was billed (tokens and server-side tools), in ticks:
#: 10**10 ticks to the dollar; a cost of more than a million dollars is not believed
_TICKS = "cost_in_usd_ticks"
_MAX_TICKS = 10**16

Where = str | Callable[[], str] | None
"""Where a usage object was read, for an error's ``where``: the text, or a function that makes
it (a stream's line number is worked out only when a usage turns out malformed), or ``None``."""


def _where(where: Where) -> str | None:
    return where() if callable(where) else where


#: The ``message_delta`` usage fields the Anthropic SDK copies over ``message_start``'s when not
#: null (``output_tokens`` always: a null or missing one leaves it unreported, as in the SDK).
_ANTHROPIC_DELTA_FIELDS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "server_tool_use",
    "output_tokens_details",
)

#: The Anthropic mapping: a ``Usage`` field (or, for the input, its uncached part) → its path.
_ANTHROPIC_FIELDS: dict[str, str] = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_write_tokens": "cache_creation_input_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_write_5m_tokens": "cache_creation.ephemeral_5m_input_tokens",
    "cache_write_1h_tokens": "cache_creation.ephemeral_1h_input_tokens",
    "output_reasoning_tokens": "output_tokens_details.thinking_tokens",
}
_ANTHROPIC_MAPPED = frozenset(_ANTHROPIC_FIELDS.values())
#: Each OpenAI wire's mapping: a ``Usage`` field → the dotted path it is read from (the two
#: totals are checked by their own fields; ``total_tokens`` is derived, so only marked mapped).
_CHAT_FIELDS: dict[str, str] = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "cache_read_tokens": "prompt_tokens_details.cached_tokens",
    "cache_write_tokens": "prompt_tokens_details.cache_write_tokens",
    "input_audio_tokens": "prompt_tokens_details.audio_tokens",
    "output_reasoning_tokens": "completion_tokens_details.reasoning_tokens",
    "output_audio_tokens": "completion_tokens_details.audio_tokens",
}
_RESPONSES_FIELDS: dict[str, str] = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "input_tokens_details.cached_tokens",
    "cache_write_tokens": "input_tokens_details.cache_write_tokens",
    "output_reasoning_tokens": "output_tokens_details.reasoning_tokens",
}
#: DeepSeek's count of the prompt read from its cache (``prompt_tokens`` is the hits plus
#: ``prompt_cache_miss_tokens``): the cache reads when it is reported, whatever
#: ``prompt_tokens_details.cached_tokens`` says (a compatible field DeepSeek may send as 0)
_CHAT_HITS = "prompt_cache_hit_tokens"
_CHAT_MAPPED = frozenset({*_CHAT_FIELDS.values(), "total_tokens", _CHAT_HITS, _TICKS})
_RESPONSES_MAPPED = frozenset({*_RESPONSES_FIELDS.values(), "total_tokens", _TICKS})


def checked_count(value: object, name: str, wire: str, where: Where = None) -> int | None:
    """A count the mapping relies on: ``None`` when not reported, else a whole number."""
    if value is None:
        return None
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    raise StreamProtocolError(
        f"malformed {wire} usage: {name!r} is {shown(value)}, not a token count "
        f"(a whole number from 0 to {MAX_COUNT})",
        where=_where(where),
    )


class _Table:
    """A wire's mapping as tables to read a usage by, split once at import rather than per
    usage.

    ``rows``: (``Usage`` field, first key, second key or ``""``, the dotted path for an error),
    in the order a malformed count is looked for. The same rows cut for :func:`_read`'s one
    pass: ``top`` a top-level key → its field, ``nested`` a first key → its (second key, field)
    pairs, ``none`` every field ``None``.
    """

    __slots__ = ("mapped", "nested", "none", "rows", "top")

    def __init__(self, fields: dict[str, str], mapped: frozenset[str]) -> None:
        self.rows = tuple(
            (field, path.partition(".")[0], path.partition(".")[2], path)
            for field, path in fields.items()
        )
        self.top = {head: field for field, head, rest, _ in self.rows if not rest}
        self.nested: dict[str, tuple[tuple[str, str], ...]] = {}
        for field, head, rest, _ in self.rows:
            if rest:
                self.nested[head] = (*self.nested.get(head, ()), (rest, field))
        assert not self.top.keys() & self.nested.keys()  # a key is a count or holds counts
        self.none: dict[str, int | None] = dict.fromkeys(fields)
        self.mapped = mapped


def _read(
    usage: Mapping[str, object], table: _Table, wire: str, where: Where
) -> tuple[dict[str, int | None], dict[str, int] | None]:
    """Each field of ``table`` read from ``usage`` and checked as :func:`checked_count` does,
    and the other whole-number counts (``details``), in one pass over the object.

    A mapped count that is not ``None`` or a valid count sends the usage to :func:`_malformed`,
    which names the first malformed field in the table's order. A first key of a nested field
    whose value is not an object (``null``, ``0``, ``[]``…) leaves that field ``None``.
    """
    counts = table.none.copy()
    found: dict[str, int] = {}
    top = table.top
    mapped = table.mapped
    for key, value in usage.items():
        field = top.get(key)
        if field is not None:
            if value is None or (type(value) is int and 0 <= value <= MAX_COUNT):
                counts[field] = value
            else:
                _malformed(usage, table, wire, where)
        elif type(value) is int:
            if key not in mapped and 0 <= value <= MAX_COUNT:
                found[key] = value
        elif isinstance(value, dict):
            inner: dict[str, object] = value  # pyright: ignore[reportUnknownVariableType]
            for rest, field in table.nested.get(key, ()):
                count = inner.get(rest)
                if count is None or (type(count) is int and 0 <= count <= MAX_COUNT):
                    counts[field] = count
                else:
                    _malformed(usage, table, wire, where)
            _collect(inner, key + ".", mapped, found)
    return counts, found or None


def _malformed(usage: Mapping[str, object], table: _Table, wire: str, where: Where) -> NoReturn:
    """Raise for the first field of ``table`` (in its order) that is not a valid count (one
    is: :func:`_read` found it)."""
    for _, head, rest, path in table.rows:
        value: object = usage.get(head)
        if rest and value is not None:
            value = value.get(rest) if isinstance(value, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        checked_count(value, path, wire, where)  # pyright: ignore[reportUnknownArgumentType]
    raise AssertionError("no malformed count")  # pragma: no cover - _read found one


def _collect(
    obj: Mapping[str, object], prefix: str, mapped: frozenset[str], found: dict[str, int]
) -> None:
    for key, value in obj.items():
        name = prefix + key
        if type(value) is int:
            if name not in mapped and 0 <= value <= MAX_COUNT:
                found[name] = value
        elif isinstance(value, dict) and prefix.count(".") < 4:
            _collect(value, name + ".", mapped, found)  # pyright: ignore[reportUnknownArgumentType]


_ANTHROPIC_TABLE = _Table(_ANTHROPIC_FIELDS, _ANTHROPIC_MAPPED)
_CHAT_TABLE = _Table(_CHAT_FIELDS, _CHAT_MAPPED)
_RESPONSES_TABLE = _Table(_RESPONSES_FIELDS, _RESPONSES_MAPPED)


def _cost(usage: Mapping[str, object]) -> float | None:
    """The provider's own cost in USD: ``cost`` (OpenRouter), else ``cost_in_usd_ticks`` (xAI;
    the float nearest the exact dollars); ``None`` when neither is a cost of 0 or more."""
    cost = usage.get("cost")
    if type(cost) is float or type(cost) is int:
        try:
            value = float(cost)
        except OverflowError:  # an integer past the largest float: no cost, as inf is none
            return None
        if math.isfinite(value) and value >= 0:
            return value
        return None
    ticks = usage.get(_TICKS)
    if type(ticks) is int and 0 <= ticks <= _MAX_TICKS:
        return float(Decimal(ticks).scaleb(-10))
    return None


def _reasoning_outside(usage: Mapping[str, object], counts: dict[str, int | None]) -> None:
    """Make the output count the reasoning where the provider counts it apart (xAI: output 9,
    reasoning 94, ``total_tokens`` 135 for 32 in): the output is then output plus reasoning.
    Told by ``total_tokens``, which is input plus output where reasoning is part of the output
    (OpenAI's way) and adds the reasoning on top where it is not."""
    total = usage.get("total_tokens")
    if type(total) is not int:
        return
    inp = counts["input_tokens"] or 0
    out = counts["output_tokens"] or 0
    reasoning = counts["output_reasoning_tokens"] or 0
    if total != inp + out and total == inp + out + reasoning:
        counts["output_tokens"] = out + reasoning


def _as_object(raw: object, wire: str, where: Where) -> Mapping[str, object] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise StreamProtocolError(
            f"malformed {wire} usage: expected an object, got {shown(raw)}", where=_where(where)
        )
    return raw  # pyright: ignore[reportUnknownVariableType]


def usage_object(raw: object, wire: str, where: Where = None) -> dict[str, object]:
    """A usage object as sent, copied (``{}`` for ``null``); anything else is malformed."""
    if type(raw) is dict:  # what a decoder hands over: no call to say so
        return dict(raw)  # pyright: ignore[reportUnknownArgumentType]
    usage = _as_object(raw, wire, where)
    return {} if usage is None else dict(usage)


def merge_anthropic_delta(
    start: dict[str, object], delta: object, where: Where = None
) -> dict[str, object]:
    """``message_start``'s usage with a ``message_delta``'s laid over it, as the SDK does: each
    of its fields that is not null replaces the earlier value (counts are cumulative)."""
    fields = _as_object(delta, "Anthropic", where)
    if fields is None:
        return start
    merged = dict(start)
    merged["output_tokens"] = fields.get("output_tokens")  # always, null or absent too
    if len(fields) > 1 or "output_tokens" not in fields:  # else no other field to lay over
        for name in _ANTHROPIC_DELTA_FIELDS:
            value = fields.get(name)
            if value is not None:
                merged[name] = value
    return merged


def anthropic_usage(raw: object, where: Where = None) -> Usage | None:
    """An Anthropic usage object (``message_start``'s, folded with ``message_delta``'s)."""
    usage = _as_object(raw, "Anthropic", where)
    if usage is None:
        return None
    return anthropic_usage_of(usage, where)


def anthropic_usage_of(usage: Mapping[str, object], where: Where = None) -> Usage | None:
    """:func:`anthropic_usage` of a usage already known to be an object (what
    :func:`usage_object` and :func:`merge_anthropic_delta` return): its type not asked again."""
    counts, details = _read(usage, _ANTHROPIC_TABLE, "Anthropic", where)
    uncached = counts["input_tokens"]
    writes = counts["cache_write_tokens"]
    reads = counts["cache_read_tokens"]
    write_5m = counts["cache_write_5m_tokens"]
    write_1h = counts["cache_write_1h_tokens"]
    if (write_5m is not None or write_1h is not None) and (
        writes is None or (write_5m or 0) + (write_1h or 0) != writes
    ):
        write_5m = write_1h = None  # the split of an earlier total: no longer true
    total_in = (uncached or 0) + (writes or 0) + (reads or 0)
    output = counts["output_tokens"] or 0
    if not total_in and not output:
        return None  # a usage that says nothing (this wire sends no cost)
    return Usage(
        input_tokens=total_in,
        output_tokens=output,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        output_reasoning_tokens=counts["output_reasoning_tokens"],
        details=details,
    )


def openai_chat_usage(raw: object, where: Where = None) -> Usage | None:
    """An OpenAI Chat Completions ``usage`` object (the usage chunk's, or a completion's)."""
    return _openai_usage(raw, "OpenAI", _CHAT_TABLE, where)


def responses_usage(raw: object, where: Where = None) -> Usage | None:
    """An OpenAI Responses ``response.usage`` object (from the terminal event, or a reply)."""
    return _openai_usage(raw, "OpenAI Responses", _RESPONSES_TABLE, where)


def _openai_usage(
    raw: object,
    wire: str,
    table: _Table,
    where: Where,
) -> Usage | None:
    usage = _as_object(raw, wire, where)
    if usage is None:
        return None
    counts, details = _read(usage, table, wire, where)
    if table is _CHAT_TABLE and (hits := usage.get(_CHAT_HITS)) is not None:
        counts["cache_read_tokens"] = checked_count(hits, _CHAT_HITS, wire, where)
    if counts["output_reasoning_tokens"]:
        _reasoning_outside(usage, counts)
    cost = _cost(usage)
    if not counts["input_tokens"] and not counts["output_tokens"] and cost is None:
        return None  # a usage that says nothing (no tokens either way, no cost)
    counts["input_tokens"] = counts["input_tokens"] or 0
    counts["output_tokens"] = counts["output_tokens"] or 0
    return Usage(**counts, details=details, provider_cost=cost)  # pyright: ignore[reportArgumentType]
