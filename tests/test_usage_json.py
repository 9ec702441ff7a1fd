"""Usage in the Message JSON: ``input_tokens`` and ``output_tokens`` are always there and no
count is negative, both ways in (``message_from_json`` and a message dict).

Before, ``-5`` was kept as a count, ``{}`` became a usage of zero tokens, and a message dict
with a negative count silently lost its usage.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from rxturn.errors import ConfigError
from rxturn.messages import Message, TextPart, Usage, as_message, message_from_json


def _json(usage: Any) -> bytes:
    return json.dumps({"role": "assistant", "content": [], "usage": usage}).encode()


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ({"input_tokens": -5, "output_tokens": 1}, "$.usage.input_tokens"),
        ({"input_tokens": 5, "output_tokens": -1}, "$.usage.output_tokens"),
        ({"input_tokens": 5, "output_tokens": 1, "cache_read_tokens": -1}, "cache_read_tokens"),
        ({"input_tokens": 5, "output_tokens": 1, "details": {"x.y": -2}}, "$.usage.details"),
        ({"input_tokens": 5, "output_tokens": 1, "provider_cost": -0.5}, "provider_cost"),
        ({}, "`input_tokens` - at `$.usage`"),
        ({"input_tokens": 3}, "`output_tokens` - at `$.usage`"),
        ({"output_tokens": 0}, "`input_tokens` - at `$.usage`"),
    ],
    ids=["input", "output", "cache read", "details", "cost", "empty", "no output", "no input"],
)
def test_message_json_refuses_a_bad_usage_naming_the_field(usage: Any, field: str) -> None:
    with pytest.raises(msgspec.ValidationError) as caught:
        message_from_json(_json(usage))
    assert field in str(caught.value)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"input_tokens": 0, "output_tokens": 0}, Usage(input_tokens=0, output_tokens=0)),
        ({"input_tokens": 7, "output_tokens": 0}, Usage(input_tokens=7, output_tokens=0)),
        (None, None),
    ],
)
def test_reported_zeros_and_null_still_decode(usage: Any, expected: Usage | None) -> None:
    assert message_from_json(_json(usage)).usage == expected


@pytest.mark.parametrize(
    ("usage", "fragment"),
    [
        (
            {"input_tokens": -5, "output_tokens": 1},
            "history[0].usage.input_tokens: Expected `int` >= 0",
        ),
        ({"input_tokens": 1, "output_tokens": 1, "details": {"a": -1}}, "history[0].usage.details"),
        ({}, "history[0].usage needs 'input_tokens'"),
        ([1, 2], "history[0].usage must be an object or null"),
    ],
    ids=["negative", "negative detail", "empty", "not an object"],
)
def test_a_message_dict_with_a_bad_usage_is_a_config_error(usage: Any, fragment: str) -> None:
    data = {"role": "assistant", "content": [{"type": "text", "text": "x"}], "usage": usage}
    with pytest.raises(ConfigError) as caught:
        as_message(data, "history[0]")
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_a_message_dict_keeps_a_good_usage() -> None:
    data = {
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "usage": {"input_tokens": 4, "output_tokens": 2},
    }
    assert as_message(data, "history[0]") == Message(
        role="assistant",
        content=(TextPart("x"),),
        usage=Usage(input_tokens=4, output_tokens=2),
    )
