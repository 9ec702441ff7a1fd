"""The audit trail: runs of turns, JSON lines round trip, and Message JSON part shapes
(docs/behaviour.md §6)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from rxturn.engine.records.audit import AuditTrail, Run, Turn
from rxturn.errors import ConfigError
from rxturn.messages import Message, StopReason, TextPart, ToolCallPart, Usage


def make_turn(index: int, **extra: object) -> Turn:
    fields: dict[str, object] = {
        "turn": index,
        "input": f"question {index}",
        "output": f"answer {index}",
        "tool_calls": (),
        "input_tokens": 10 + index,
        "output_tokens": 2 + index,
    }
    fields.update(extra)
    return Turn(**fields)  # pyright: ignore[reportArgumentType]


def test_turn_defaults_match_the_reference_record() -> None:
    turn = make_turn(0)
    assert (turn.model, turn.attempts, turn.rescued, turn.stop_reason, turn.discarded_usage) == (
        "",
        1,
        False,
        None,
        None,
    )
    with pytest.raises(AttributeError):
        turn.output = "rewritten"  # pyright: ignore[reportAttributeAccessIssue]  # frozen: nothing can rewrite history


def test_runs_and_boundaries() -> None:
    trail = AuditTrail()
    assert trail.runs == [] and trail.all_turns() == []
    trail.append(make_turn(0))  # no run yet: one is started
    trail.append(make_turn(1))
    second = trail.start_run()
    assert second.run_id == 1 and trail.current_run is second
    trail.append(make_turn(0))
    assert [run.run_id for run in trail.runs] == [0, 1]
    assert [len(run.turns) for run in trail.runs] == [2, 1]
    assert [(t.turn, t.input) for t in trail.all_turns()] == [
        (0, "question 0"),
        (1, "question 1"),
        (0, "question 0"),
    ]
    assert len(trail) == 2


def test_current_run_starts_one_only_when_needed() -> None:
    trail = AuditTrail()
    first = trail.current_run
    assert first.run_id == 0
    assert trail.current_run is first
    assert len(trail.runs) == 1


def test_append_rejects_what_is_not_a_turn() -> None:
    with pytest.raises(ConfigError, match="Turn values"):
        AuditTrail().append({"turn": 0})  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("runs", [5, "runs", {}, [{"run_id": 0}]])
def test_a_trail_built_from_what_is_not_runs_is_refused(runs: Any) -> None:
    # before: an int was a TypeError from len() at the first repr, a str an AttributeError
    # ('str' object has no attribute 'turns'), a dict was kept as the runs
    with pytest.raises(ConfigError, match=r"AuditTrail\(runs=\.\.\.\) must be a list of Run"):
        AuditTrail(runs)
    kept = [Run(run_id=0)]
    assert AuditTrail(kept).runs is kept  # a list of runs is used as it is


def test_trail_is_independent_of_the_conversation() -> None:
    # Compaction rewrites the conversation list; the trail holds its own immutable copies.
    conversation = [Message.user("what is 2+2?"), Message.assistant("4")]
    trail = AuditTrail()
    trail.append(make_turn(0, input=conversation[0].text, output=conversation[1].text))
    conversation[:] = [Message.user("[summary] the user asked arithmetic")]
    assert trail.all_turns()[0].input == "what is 2+2?"
    assert trail.all_turns()[0].output == "4"


def full_trail() -> AuditTrail:
    trail = AuditTrail()
    trail.append(
        make_turn(
            0,
            tool_calls=(
                ToolCallPart("call_1", "get_weather", {"city": "Paris", "days": [1, 2]}),
                ToolCallPart("call_2", "noop"),
            ),
            model="backup",
            attempts=3,
            stop_reason=StopReason.TOOL_CALL,
            discarded_usage=Usage(input_tokens=7, output_tokens=4),
        )
    )
    trail.append(make_turn(1, rescued=True, stop_reason=StopReason.MAX_TOKENS, output="ünïcode ✓"))
    trail.start_run()
    trail.append(make_turn(0, input="line\nbreak", output=""))
    return trail


def test_jsonl_is_one_object_per_turn_with_its_run_id() -> None:
    text = full_trail().to_jsonl()
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    assert [(r["run_id"], r["turn"]) for r in records] == [(0, 0), (0, 1), (1, 0)]
    assert next(iter(records[0])) == "run_id"
    assert records[0]["tool_calls"] == [
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "get_weather",
            "input": {"city": "Paris", "days": [1, 2]},
        },
        {"type": "tool_call", "id": "call_2", "name": "noop", "input": {}},
    ]
    assert records[0]["stop_reason"] == "tool_call"
    assert records[0]["discarded_usage"] == {"input_tokens": 7, "output_tokens": 4}
    assert records[1]["discarded_usage"] is None and records[1]["rescued"] is True
    assert records[1]["output"] == "ünïcode ✓"
    assert set(records[2]) == {
        "run_id",
        "turn",
        "input",
        "output",
        "tool_calls",
        "input_tokens",
        "output_tokens",
        "model",
        "attempts",
        "rescued",
        "stop_reason",
        "discarded_usage",
        "attempt_log",
        "billed_usage",
        "error",
        "cost",
    }


def test_tool_calls_use_the_message_json_part_shape() -> None:
    # The same part inside a Message (docs/behaviour.md §6) and inside the audit line encode
    # identically.
    call = ToolCallPart("c1", "f", {"x": 1})
    message = json.loads(msgspec.json.encode(Message(content=(TextPart("t"), call))))
    trail = AuditTrail()
    trail.append(make_turn(0, tool_calls=(call,)))
    line = json.loads(trail.to_jsonl())
    assert line["tool_calls"] == [message["content"][1]]


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_jsonl_round_trip(as_bytes: bool) -> None:
    trail = full_trail()
    text = trail.to_jsonl()
    back = AuditTrail.from_jsonl(text.encode() if as_bytes else text)
    assert back.runs == trail.runs
    assert back.to_jsonl() == text
    assert isinstance(back.all_turns()[0].tool_calls, tuple)
    assert back.all_turns()[0].stop_reason is StopReason.TOOL_CALL


def test_round_trip_keeps_run_ids_and_continues_numbering() -> None:
    text = (
        '{"run_id":4,"turn":0,"input":"a","output":"b","tool_calls":[],'
        '"input_tokens":1,"output_tokens":1}\n'
        "\n"
        '{"run_id":7,"turn":0,"input":"c","output":"d","tool_calls":[],'
        '"input_tokens":1,"output_tokens":1}\r\n'
    )
    trail = AuditTrail.from_jsonl(text)
    assert [run.run_id for run in trail.runs] == [4, 7]
    assert trail.start_run().run_id == 8


def test_empty_input_is_an_empty_trail() -> None:
    assert AuditTrail.from_jsonl("").runs == []
    assert AuditTrail().to_jsonl() == ""


def test_empty_runs_have_no_lines() -> None:
    trail = AuditTrail()
    trail.start_run()
    trail.start_run()
    trail.append(make_turn(0))
    assert [json.loads(x)["run_id"] for x in trail.to_jsonl().splitlines()] == [1]


GOOD = '"turn":0,"input":"a","output":"b","tool_calls":[],"input_tokens":1,"output_tokens":1'


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json}\n", "line 1"),
        (f'{{"run_id":0,{GOOD}}}\n[1,2]\n', "line 2"),
        (f'{{"run_id":0,{GOOD}}}\n{{"run_id":0}}\n', "line 2"),
        (
            '{"run_id":0,"turn":-1,"input":"a","output":"b","tool_calls":[],'
            '"input_tokens":1,"output_tokens":1}',
            "line 1",
        ),
        (
            '{"run_id":0,"turn":0,"input":"a","output":"b","tool_calls":[{"type":"text","text":"x"}],'
            '"input_tokens":1,"output_tokens":1}',
            "tool_calls",
        ),
        (
            '{"run_id":0,"turn":0,"input":"a","output":"b","tool_calls":[],'
            '"input_tokens":1,"output_tokens":1,"stop_reason":"exploded"}',
            "stop_reason",
        ),
        (f'{{"run_id":1,{GOOD}}}\n{{"run_id":0,{GOOD}}}\n', "run_id 0 after run 1"),
        (f'{{"run_id":-3,{GOOD}}}\n', "run_id"),
        (b'{"run_id":0,"turn":0,"input":"\xff"}', "line 1"),
    ],
    ids=[
        "not-json",
        "not-object",
        "missing-fields",
        "negative-turn",
        "wrong-part-type",
        "bad-stop-reason",
        "run-goes-back",
        "negative-run",
        "bad-utf8",
    ],
)
def test_from_jsonl_rejects_bad_lines(text: str | bytes, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as info:
        AuditTrail.from_jsonl(text)
    assert str(info.value).startswith("audit JSON line")


def test_run_is_a_plain_record() -> None:
    run = Run(run_id=3)
    assert run.turns == []
    run.turns.append(make_turn(0))
    assert Run(run_id=3).turns == []  # no shared default list


def test_round_trip_keeps_every_usage_count_and_the_cost() -> None:
    from decimal import Decimal

    from rxturn import Cost
    from rxturn.engine.records.audit import AttemptRecord

    usage = Usage(
        input_tokens=5020,
        output_tokens=90,
        cache_read_tokens=4000,
        cache_write_tokens=1000,
        cache_write_5m_tokens=600,
        cache_write_1h_tokens=400,
        output_reasoning_tokens=60,
        details={"server_tool_use.web_search_requests": 1},
    )
    attempt = AttemptRecord(
        model="m", kind="stream", outcome="served", usage=usage, cost=Decimal("0.0123")
    )
    trail = AuditTrail()
    trail.append(
        make_turn(
            0,
            attempt_log=(attempt,),
            billed_usage=usage,
            cost=Cost(total=Decimal("0.0123"), unpriced_attempts=2),
        )
    )
    line = json.loads(trail.to_jsonl())
    assert line["cost"] == {"total": "0.0123", "unpriced_attempts": 2, "currency": "USD"}
    assert line["billed_usage"]["cache_write_1h_tokens"] == 400
    assert "input_audio_tokens" not in line["billed_usage"]  # not reported: not there
    assert AuditTrail.from_jsonl(trail.to_jsonl()).runs == trail.runs
