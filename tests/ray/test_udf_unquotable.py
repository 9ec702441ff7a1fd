"""``TurnUDF`` given a value no message can quote whole (an int Python will not print, an object
whose repr raises, a million-character string) in a constructor argument or as a batch's
column name: a one-line ConfigError, before Ray is touched (no cluster is needed), never the
error raised while that message was written, nor a megabyte of message."""

from __future__ import annotations

from typing import Any

from unquotable import Case, one_line_refusals

from rxturn.errors import ConfigError
from rxturn.ray import TurnUDF

URL = "http://127.0.0.1:9"  # never asked: every call here is refused before any request
TEXT: tuple[type, ...] = (str,)  # a long string is still a name or a prompt


def _made(udf: TurnUDF) -> None:
    udf.close()  # (accepted: its loop thread is not left running)


def _key(bad: object) -> Any:
    """``bad`` as a dict key (a list is not hashable; a tuple of the same is no better)."""
    return tuple(bad) if isinstance(bad, list) else bad


def _column_named(bad: object) -> None:
    udf = TurnUDF("anthropic", "m", base_url=URL)
    try:
        udf({"id": ["a"], "prompt": ["hi"], _key(bad): "not a column"})
    finally:
        udf.close()


#: (what, the call, the types of a value it takes)
CASES: list[Case] = [
    ("provider", lambda bad: _made(TurnUDF(bad, "m", base_url=URL)), ()),
    ("model", lambda bad: _made(TurnUDF("anthropic", bad, base_url=URL)), TEXT),
    ("base_url", lambda bad: _made(TurnUDF("anthropic", "m", base_url=bad)), ()),
    ("system", lambda bad: _made(TurnUDF("anthropic", "m", base_url=URL, system=bad)), TEXT),
    ("max_tokens", lambda bad: _made(TurnUDF("anthropic", "m", base_url=URL, max_tokens=bad)), ()),
    (
        "concurrency",
        lambda bad: _made(TurnUDF("anthropic", "m", base_url=URL, concurrency=bad)),
        (),
    ),
    ("rpm", lambda bad: _made(TurnUDF("anthropic", "m", base_url=URL, rpm=bad)), ()),
    ("tpm", lambda bad: _made(TurnUDF("anthropic", "m", base_url=URL, tpm=bad)), ()),
    (
        "budget_name",
        lambda bad: _made(TurnUDF("anthropic", "m", base_url=URL, budget_name=bad)),
        TEXT,
    ),
    ("column name", _column_named, ()),
]


test_an_unquotable_argument_is_a_one_line_config_error = one_line_refusals(CASES, ConfigError)
