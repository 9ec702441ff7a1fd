"""The test kit's entry points, given a value no message can quote whole (an int Python will
not print, an object whose repr raises, a million-character string) in any argument or any
place of a fake provider's scenario, refuse it with a one-line ConfigError, never with the
error raised while that message was written, nor with a megabyte of message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex.testing import TestScheduler
from unquotable import Case, one_line_refusals

from rxturn.errors import ConfigError
from rxturn.testing import (
    Entry,
    FakeProvider,
    Later,
    MockResponse,
    ScriptedClient,
    drive,
    find_secret,
    load_scenario,
    timeline,
)

TEXT: tuple[type, ...] = (str,)  # a long string is still a name
COUNT: tuple[type, ...] = (int,)  # a huge int is still a count (the negative one is not)
NAN = float("nan")  # a value the scenario refuses, under a key that is to be named


def _key(bad: object) -> Any:
    """``bad`` as a dict key (a list is not hashable; a tuple of the same is no better)."""
    return tuple(bad) if isinstance(bad, list) else bad


def _scenario(entry: object) -> Callable[[Any], object]:
    """A scenario whose one entry is ``entry`` with ``bad`` in the place of ``"BAD"``."""

    def put(value: object, bad: object) -> object:
        if value == "BAD":
            return bad
        if isinstance(value, dict):
            return {put(k, _key(bad)): put(v, bad) for k, v in value.items()}
        if isinstance(value, list):
            return [put(item, bad) for item in value]
        return value

    return lambda bad: load_scenario({"models": {"m": [put(entry, bad)]}})


def _str_field(field: str) -> bool:
    return "str" in str(Entry.__annotations__.get(field, ""))


#: (what, the call, the types of a value it takes)
CASES: list[Case] = [
    ("scenario", lambda bad: load_scenario(bad), ()),
    ("top key", lambda bad: load_scenario({"models": {"m": [{}]}, _key(bad): 1}), ()),
    ("models", lambda bad: load_scenario({"models": bad}), ()),
    ("entries", lambda bad: load_scenario({"models": {"m": bad}}), ()),
    (
        "a model's entries",
        lambda bad: load_scenario({"models": {_key(bad): [{"status": "x"}]}}),
        (),
    ),
    ("entry", _scenario("BAD"), ()),
    ("entry key", _scenario({"BAD": 1}), ()),
    ("tool input key", _scenario({"tool_calls": [{"name": "t", "input": {"BAD": NAN}}]}), ()),
    ("tool input value", _scenario({"tool_calls": [{"name": "t", "input": {"a": "BAD"}}]}), TEXT),
    ("raw_usage key", _scenario({"raw_usage": {"BAD": NAN}}), ()),
    (
        "window seconds",
        lambda bad: load_scenario(
            {"models": {"m": [{}]}, "rate_limit_windows": [{"seconds": bad}]}
        ),
        (),
    ),
    *[
        (f"entry {field}", _scenario({field: "BAD"}), TEXT if _str_field(field) else ())
        for field in Entry.__struct_fields__
    ],
    ("FakeProvider scenario", lambda bad: FakeProvider(bad), ()),
    ("FakeProvider host", lambda bad: FakeProvider(host=bad), TEXT),
    ("FakeProvider port", lambda bad: FakeProvider(port=bad), ()),
    (
        "ScriptedClient models key",
        lambda bad: ScriptedClient(TestScheduler(), [], models={_key(bad): bad}),
        (),
    ),
    ("Later delay", lambda bad: Later(bad, None), ()),
    ("timeline start", lambda bad: timeline([], start=bad), ()),
    ("timeline step", lambda bad: timeline([], step=bad), ()),
    (
        "drive idle_rounds",
        lambda bad: asyncio.run(drive(TestScheduler(), reactivex.empty(), idle_rounds=bad)),
        COUNT,
    ),
    (
        "drive limit",
        lambda bad: asyncio.run(drive(TestScheduler(), reactivex.empty(), limit=bad)),
        (),
    ),
    ("find_secret max_depth", lambda bad: find_secret({}, "s", max_depth=bad), COUNT),
    ("find_secret max_objects", lambda bad: find_secret({}, "s", max_objects=bad), COUNT),
    ("find_secret name", lambda bad: find_secret({}, "s", name=bad), TEXT),
    ("MockResponse status", lambda bad: MockResponse(status=bad), ()),
    ("MockResponse header name", lambda bad: MockResponse(headers={_key(bad): "v"}), TEXT),
    ("MockResponse header value", lambda bad: MockResponse(headers={"a": bad}), TEXT),
]


test_an_unquotable_value_is_a_one_line_config_error = one_line_refusals(CASES, ConfigError)
