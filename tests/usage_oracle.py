"""The usage an official SDK folded, written as the :class:`~rxturn.messages.Usage` it maps to.

Tests fold the same bytes with the SDK and with rxturn; these functions read the SDK's folded
usage object (``model_dump()``, unknown fields included) and spell out the documented mapping
(docs/usage-and-cost.md) so the two can be compared field by field. ``None`` for a usage object
that says nothing (no tokens either way, no cost), as rxturn reports it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rxturn.messages import Usage

__all__ = ["anthropic_expected", "chat_expected", "responses_expected"]


def _flat(obj: dict[str, Any], prefix: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for key, value in obj.items():
        if type(value) is int:
            out[prefix + key] = value
        elif isinstance(value, dict):
            out.update(_flat(value, prefix + key + "."))
    return out


def _details(dump: dict[str, Any], mapped: set[str]) -> dict[str, int] | None:
    found = {k: v for k, v in _flat(dump).items() if k not in mapped}
    return found or None


def _nothing(usage: Usage) -> Usage | None:
    if not usage.input_tokens and not usage.output_tokens and usage.provider_cost is None:
        return None
    return usage


def _provider_cost(dump: dict[str, Any]) -> float | None:
    """``cost`` (OpenRouter), else xAI's ``cost_in_usd_ticks`` (10**10 to the dollar)."""
    cost = dump.get("cost")
    if isinstance(cost, int | float):
        return float(cost)
    ticks = dump.get("cost_in_usd_ticks")
    if type(ticks) is int and ticks >= 0:
        return float(Decimal(ticks) / 10**10)
    return None


def _output(dump: dict[str, Any], inp: Any, out: Any, reasoning: Any) -> int:
    """The output count: reasoning counted apart from it (xAI) is added, which a
    ``total_tokens`` of input + output + reasoning (not input + output) says."""
    inp, out, reasoning = inp or 0, out or 0, reasoning or 0
    total = dump.get("total_tokens")
    if reasoning and type(total) is int and total != inp + out and total == inp + out + reasoning:
        return out + reasoning
    return out


def anthropic_expected(sdk_usage: Any) -> Usage | None:
    if sdk_usage is None:
        return None
    dump = sdk_usage.model_dump()
    writes = dump.get("cache_creation_input_tokens")
    reads = dump.get("cache_read_input_tokens")
    split = dump.get("cache_creation") or {}
    write_5m = split.get("ephemeral_5m_input_tokens")
    write_1h = split.get("ephemeral_1h_input_tokens")
    if (write_5m is not None or write_1h is not None) and (
        writes is None or (write_5m or 0) + (write_1h or 0) != writes
    ):
        write_5m = write_1h = None
    thinking = (dump.get("output_tokens_details") or {}).get("thinking_tokens")
    mapped = {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation.ephemeral_5m_input_tokens",
        "cache_creation.ephemeral_1h_input_tokens",
        "output_tokens_details.thinking_tokens",
    }
    return _nothing(
        Usage(
            input_tokens=(dump.get("input_tokens") or 0) + (writes or 0) + (reads or 0),
            output_tokens=dump.get("output_tokens") or 0,
            cache_read_tokens=reads,
            cache_write_tokens=writes,
            cache_write_5m_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
            output_reasoning_tokens=thinking,
            details=_details(dump, mapped),
        )
    )


def chat_expected(sdk_usage: Any) -> Usage | None:
    if sdk_usage is None:
        return None
    dump = sdk_usage.model_dump()
    prompt = dump.get("prompt_tokens_details") or {}
    completion = dump.get("completion_tokens_details") or {}
    mapped = {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details.cached_tokens",
        "prompt_tokens_details.cache_write_tokens",
        "prompt_tokens_details.audio_tokens",
        "completion_tokens_details.reasoning_tokens",
        "completion_tokens_details.audio_tokens",
        "prompt_cache_hit_tokens",
        "cost_in_usd_ticks",
    }
    hits = dump.get("prompt_cache_hit_tokens")  # DeepSeek's cache reads
    return _nothing(
        Usage(
            input_tokens=dump.get("prompt_tokens") or 0,
            output_tokens=_output(
                dump,
                dump.get("prompt_tokens"),
                dump.get("completion_tokens"),
                completion.get("reasoning_tokens"),
            ),
            cache_read_tokens=hits if hits is not None else prompt.get("cached_tokens"),
            cache_write_tokens=prompt.get("cache_write_tokens"),
            input_audio_tokens=prompt.get("audio_tokens"),
            output_reasoning_tokens=completion.get("reasoning_tokens"),
            output_audio_tokens=completion.get("audio_tokens"),
            details=_details(dump, mapped),
            provider_cost=_provider_cost(dump),
        )
    )


def responses_expected(sdk_usage: Any) -> Usage | None:
    if sdk_usage is None:
        return None
    dump = sdk_usage.model_dump()
    inp = dump.get("input_tokens_details") or {}
    out = dump.get("output_tokens_details") or {}
    mapped = {
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "input_tokens_details.cached_tokens",
        "input_tokens_details.cache_write_tokens",
        "output_tokens_details.reasoning_tokens",
        "cost_in_usd_ticks",
    }
    return _nothing(
        Usage(
            input_tokens=dump.get("input_tokens") or 0,
            output_tokens=_output(
                dump,
                dump.get("input_tokens"),
                dump.get("output_tokens"),
                out.get("reasoning_tokens"),
            ),
            cache_read_tokens=inp.get("cached_tokens"),
            cache_write_tokens=inp.get("cache_write_tokens"),
            output_reasoning_tokens=out.get("reasoning_tokens"),
            details=_details(dump, mapped),
            provider_cost=_provider_cost(dump),
        )
    )
