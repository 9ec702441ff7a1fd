"""Every attribute README.md and docs/*.md name on a result exists.

The docs' code (fenced blocks and inline code) is scanned for attribute chains on the names
they use for results — ``result`` (what ``engine.run`` returns), ``turn``/``record`` (an audit
record; ``turn`` is also a ``TurnStream`` in the turn-streams example), ``a``/``attempt`` (an
attempt record) — and on the class names themselves (``RunResult.usage``). Each chain is
followed through the annotated types (``result.turns[0].attempts`` is a ``TurnResult``'s
``attempts``), so a doc that names an attribute the code does not have fails here.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

from rxturn.engine import RunResult, TurnResult
from rxturn.engine.fanout._turn_stream import TurnStream
from rxturn.engine.records.audit import AttemptRecord, Turn

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

ROOTS: dict[str, tuple[type, ...]] = {
    "result": (RunResult,),
    "turn": (Turn, TurnStream),
    "record": (Turn,),
    "a": (AttemptRecord,),
    "attempt": (AttemptRecord,),
    "RunResult": (RunResult,),
    "TurnResult": (TurnResult,),
    "Turn": (Turn,),
    "AttemptRecord": (AttemptRecord,),
}
_CHAIN = re.compile(r"(?<![\w.])(" + "|".join(ROOTS) + r")((?:\.[A-Za-z_]\w*(?:\[-?\d+\])?)+)")
_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)


def _mentions() -> list[tuple[str, str, str]]:
    """(file, root, chain) for every attribute chain on a result name in the docs' code."""
    found: list[tuple[str, str, str]] = []
    for path in DOCS:
        for code in _CODE.findall(path.read_text()):
            for root, chain in _CHAIN.findall(code):
                found.append((path.name, root, chain))
    return found


def _unwrap(annotation: Any) -> list[Any]:
    """The types an annotation may hold (``X | None`` → ``[X]``)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _attribute_type(owner: Any, name: str) -> Any:
    """The annotated type of ``owner.name`` (``None``: it has no such attribute)."""
    if not isinstance(owner, type) or not hasattr(owner, name):
        return None
    member = getattr(owner, name, None)
    if isinstance(member, property) and member.fget is not None:
        return typing.get_type_hints(member.fget).get("return", object)
    hints = typing.get_type_hints(owner)
    return hints.get(name, object)


def _resolves(owner: Any, steps: list[str]) -> bool:
    if not steps:
        return True
    step = steps[0]
    name, _, index = step.partition("[")
    annotation = _attribute_type(owner, name)
    if annotation is None:
        return False
    candidates = _unwrap(annotation)
    if index:
        candidates = [
            arg
            for candidate in candidates
            for arg in typing.get_args(candidate)[:1]  # tuple[X, ...] / list[X] → X
        ]
    if len(steps) == 1:
        return True
    return any(_resolves(typing.get_origin(c) or c, steps[1:]) for c in candidates)


def test_the_docs_name_result_attributes() -> None:
    mentions = _mentions()
    roots = {root for _, root, _ in mentions}
    assert {"result", "turn", "a"} <= roots, "the scan must see the docs' result examples"
    assert len(mentions) >= 20


def test_every_result_attribute_the_docs_name_exists() -> None:
    missing = [
        f"{file}: {root}{chain}"
        for file, root, chain in _mentions()
        if not any(_resolves(owner, chain[1:].split(".")) for owner in ROOTS[root])
    ]
    assert not missing, "the docs name attributes the results do not have:\n" + "\n".join(missing)


def test_the_run_totals_are_where_the_docs_say() -> None:
    """The attributes a run's result carries by contract, whatever the docs say today."""
    for name in ("usage", "billed_usage", "attempt_log", "model", "text", "turns"):
        assert _resolves(RunResult, [name]), name
    assert not _resolves(RunResult, ["no_such_total"])
