"""What a tool's odd return values and its timeout do, read from the request bodies the fake
provider received (the model's view) and from the process around the run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import pytest

from rxturn import AnthropicClient, Tool, TurnEngine
from rxturn.testing import FakeProvider


def _script(name: str) -> dict[str, Any]:
    call = {"tool_calls": [{"id": "toolu_1", "name": name, "input": {}}]}
    return {"models": {"*": [call, {"text": "done"}]}}


async def _results_sent(tool: Tool | Callable[..., Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request that followed the tool call."""
    name = tool.name if isinstance(tool, Tool) else tool.__name__
    async with (
        FakeProvider(_script(name)) as fake,
        AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=fake.base_url) as client,
    ):
        result = await TurnEngine(client, tools=[tool]).run("go")
        assert result.text == "done"
        last = fake.requests[-1]["messages"][-1]
    return [block for block in last["content"] if block["type"] == "tool_result"]


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
async def test_a_tool_returning_utf8_bytes_sends_their_text(kind: type) -> None:
    """``subprocess.check_output`` returns bytes: the model reads the text, not its base64."""

    def listing() -> object:
        return kind("total 2\nnotes.txt\ncafé.md\n".encode())

    (sent,) = await _results_sent(listing)
    assert sent["content"] == "total 2\nnotes.txt\ncafé.md\n"
    assert not sent.get("is_error")


async def test_a_tool_returning_binary_bytes_is_an_error_result_naming_the_fix() -> None:
    def screenshot() -> bytes:
        return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"

    (sent,) = await _results_sent(screenshot)
    assert sent["is_error"] is True
    assert "not UTF-8" in sent["content"] and "ImagePart.from_bytes" in sent["content"]


async def test_a_sync_tool_past_its_timeout_does_not_hold_the_loops_executor() -> None:
    """A thread cannot be stopped: the timed-out tool runs on. It must not run on the loop's
    default executor, where it would hold a worker that the process's other work (and here,
    with one worker, all of it) needs."""
    release = threading.Event()
    names: list[str] = []

    def stuck() -> str:
        names.append(threading.current_thread().name)
        release.wait(30)
        return "late"

    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(pool)
    try:
        (sent,) = await _results_sent(Tool(stuck, timeout=0.05))
        assert sent["is_error"] is True and "ToolTimeoutError" in sent["content"]
        # the stuck tool still runs; the loop's own pool is free for other work
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "free"), 5) == "free"
    finally:
        release.set()
    assert names and names[0].startswith("rxturn-tool-"), names


async def test_two_calls_of_one_reply_named_alike_both_run_each_answered_once() -> None:
    """A server that is not the reference API names two calls the same: both are the model's
    calls and both run, and the next request holds distinct ids (the Anthropic API refuses one
    id twice with a 400), each result answering the call it is the result of."""
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return f"found {q}"

    calls = [
        {"id": "call_0", "name": "lookup", "input": {"q": "tea"}},
        {"id": "call_0", "name": "lookup", "input": {"q": "coffee"}},
    ]
    script = {"models": {"*": [{"tool_calls": calls}, {"text": "done"}]}}
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, tools=[lookup])
        result = await engine.run("go")
        assistant, answers = fake.requests[-1]["messages"][-2:]
    assert result.text == "done" and ran == ["tea", "coffee"]
    uses = {b["id"]: b["input"]["q"] for b in assistant["content"] if b["type"] == "tool_use"}
    assert len(uses) == 2 and "call_0" in uses
    answered = {b["tool_use_id"]: b["content"] for b in answers["content"]}
    assert answered == {id_: f"found {q}" for id_, q in uses.items()}
    # the audit keeps what the history holds
    assert [c.id for c in engine.session.runs[0].turns[0].tool_calls] == list(uses)
