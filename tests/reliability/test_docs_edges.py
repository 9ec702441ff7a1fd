"""What docs/testing.md, docs/observability.md and docs/fake-provider.md say, checked by running
it: the ``MockTransport`` example, the span counts, the fake provider's routes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from rxturn.testing import FakeProvider

DOCS = Path(__file__).resolve().parents[2] / "docs"
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow  # runs the docs/testing.md example in a fresh interpreter, twice
def test_the_mock_transport_example_runs_as_written() -> None:
    text = (DOCS / "testing.md").read_text()
    section = text[text.index("## Canned HTTP: `MockTransport`") :]
    (example,) = _blocks(section)
    out = _run(example)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "ReadError connection reset",
        "OverloadedError HTTP 529: overloaded_error: busy, 0 events processed",
    ]


_IN_MEMORY = (
    "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
    "_EXPORTER = InMemorySpanExporter()\n"
)


def _spans(code: str) -> list[str]:
    patched = _IN_MEMORY + code.replace("ConsoleSpanExporter()", "_EXPORTER")
    patched += "\nprint(*[span.name for span in _EXPORTER.get_finished_spans()], sep='\\n')\n"
    out = _run(patched)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.slow  # runs docs/observability.md's example in a fresh interpreter
def test_the_span_counts_in_observability_md_are_what_runs() -> None:
    text = (DOCS / "observability.md").read_text()
    example = _blocks(text)[0]
    claimed = re.search(r"prints (\w+) spans", text)
    assert claimed is not None
    spans = _spans(example)
    assert len(spans) == WORDS[claimed.group(1)]
    assert spans.count("rxturn.attempt") == 2  # the 529, then the reply

    per_turn = re.search(r"CPU per turn \((\w+) spans", text)
    assert per_turn is not None
    one_turn = example.replace('{"status": 529, "retry_after": 0.1}, ', "")
    assert one_turn != example
    assert len(_spans(one_turn)) == WORDS[per_turn.group(1)]


def _routes() -> list[tuple[str, str]]:
    text = (DOCS / "fake-provider.md").read_text()
    table = text[: text.index("## The shape of a scenario")]
    return re.findall(r"`(POST|GET) (/[a-z0-9_/]*)`", table)


def test_the_route_table_lists_every_wire() -> None:
    paths = {path for _, path in _routes()}
    assert {"/v1/messages", "/v1/chat/completions", "/v1/responses", "/responses"} <= paths
    assert "/api/chat" in paths


@pytest.mark.parametrize(("method", "path"), _routes())
async def test_every_documented_route_answers(method: str, path: str) -> None:
    body = {"model": "m", "stream": False, "max_tokens": 8}
    body["messages" if "responses" not in path else "input"] = [{"role": "user", "content": "hi"}]
    async with (
        FakeProvider({"models": {"*": [{"text": "ok"}]}}) as fake,
        aiohttp.ClientSession() as session,
    ):
        request = session.get if method == "GET" else session.post
        kwargs = {} if method == "GET" else {"json": body}
        async with request(fake.base_url + path, **kwargs) as response:  # pyright: ignore[reportArgumentType]
            assert response.status == 200, await response.text()
            assert (await response.read()).strip()
