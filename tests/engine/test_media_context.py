"""Media and cache markers through the context machinery: compaction, the memory query."""

from __future__ import annotations

from collections.abc import Sequence

from rxturn import CachePoint, ImagePart, InlineSource, Message, SummarizingCompactor
from rxturn.engine.context.tokens import TiktokenCounter
from rxturn.engine.context.window import memory_query
from rxturn.messages import TextPart, ToolResultPart

COUNTER = TiktokenCounter()
GIF = b"GIF89a\x10\x00\x10\x00\x00\x00\x00;"


async def _summary(messages: Sequence[Message]) -> str:
    return f"{len(messages)} messages about the manual"


async def test_the_summary_carries_the_newest_marker_of_what_it_replaced() -> None:
    history = [
        Message.user("manual " * 300, CachePoint("1h")),
        Message.assistant("read it " * 100),
        Message.user("and this", ImagePart(InlineSource("image/gif", GIF)), CachePoint()),
        Message.assistant("seen " * 100),
        Message.user("question?"),
    ]
    kept = await SummarizingCompactor(_summary, keep_fraction=0.2).compact(
        history, budget=400, counter=COUNTER
    )
    summary = kept[0]
    assert summary.text.endswith("messages about the manual")
    assert summary.content[-1] == CachePoint()  # the newest marker among the summarised
    assert kept[-1] == history[-1]


async def test_no_marker_is_invented() -> None:
    history = [Message.user("a " * 500), Message.assistant("b " * 200), Message.user("q")]
    kept = await SummarizingCompactor(_summary).compact(history, budget=200, counter=COUNTER)
    assert not any(isinstance(p, CachePoint) for m in kept for p in m.content)


def test_memory_query_reads_a_media_tool_result_as_its_text() -> None:
    shot = ToolResultPart("c", (TextPart("login page"), ImagePart(InlineSource("image/gif", GIF))))
    history = [Message(role="user", content=(shot, ToolResultPart("d", "second")))]
    assert memory_query(history) == "login page\nsecond"
