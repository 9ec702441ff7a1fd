"""The batch API given a value no message can quote whole (an int Python will not print, an
object whose repr raises, a million-character string) in a setting, an argument or an input
row: a one-line ConfigError or BatchInputError, never the error raised while that message was
written, nor a megabyte of message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from unquotable import UNQUOTABLE, UNQUOTABLE_IDS, assert_refused_in_one_line

from rxturn.batch import BatchConfig, BatchInputError, run_batch
from rxturn.errors import ConfigError
from rxturn.testing import FakeProvider

SCENARIO = {"models": {"*": [{"text": "an answer"}]}}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
TEXT: tuple[type, ...] = (str,)  # a long string is still a name


def _key(bad: object) -> Any:
    """``bad`` as a dict key (a list is not hashable; a tuple of the same is no better)."""
    return tuple(bad) if isinstance(bad, list) else bad


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
@pytest.mark.parametrize("field", BatchConfig.__struct_fields__)
def test_an_unquotable_setting_is_a_one_line_config_error(field: str, bad: object) -> None:
    settings: dict[str, Any] = {"provider": "anthropic", "model": "m", field: bad}
    takes = TEXT if field in ("model", "system") else ()
    assert_refused_in_one_line(
        lambda _: BatchConfig(**settings).check(), bad, ConfigError, takes=takes
    )


#: (what, the rows holding ``bad``); every such row is refused, whatever ``bad`` is
ROWS: list[tuple[str, Callable[[Any], list[Any]]]] = [
    ("row", lambda bad: [bad]),
    ("field", lambda bad: [{"id": "a", "prompt": "hi", _key(bad): 1}]),
    ("option", lambda bad: [{"id": "a", "prompt": "hi", "options": {_key(bad): 1}}]),
    ("custom_id with a prompt", lambda bad: [{"custom_id": bad, "prompt": "hi"}]),
    (
        "method",
        lambda bad: [
            {"custom_id": "a", "method": bad, "url": "/v1/chat/completions", "body": CHAT}
        ],
    ),
    ("url", lambda bad: [{"custom_id": "a", "url": _key(bad), "body": CHAT}]),
    ("duplicate id", lambda bad: [{"id": bad, "prompt": "hi"}, {"id": bad, "prompt": "hi"}]),
]


def _run(rows: list[Any]) -> None:
    async def run() -> None:
        async with FakeProvider(SCENARIO) as fake:
            config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url)
            await asyncio.wait_for(run_batch(rows, config, progress=False), 30)

    asyncio.run(run())


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
@pytest.mark.parametrize("rows", [r[1] for r in ROWS], ids=[r[0] for r in ROWS])
def test_an_unquotable_row_value_is_a_one_line_batch_input_error(
    rows: Callable[[Any], list[Any]], bad: object
) -> None:
    # before: a megabyte message naming a long field, option, method, url or key
    assert_refused_in_one_line(lambda value: _run(rows(value)), bad, BatchInputError)


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
def test_an_unquotable_progress_is_a_one_line_config_error(bad: object) -> None:
    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    assert_refused_in_one_line(
        lambda value: asyncio.run(run_batch([], config, progress=value)),
        bad,
        ConfigError,
    )
