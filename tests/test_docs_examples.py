"""The complete programs among docs/*.md's Python blocks run as written, offline.

tests/test_readme.py runs the README's blocks; this runs every block of docs/*.md that is a
whole program (it ends in ``asyncio.run(main())``) against the fake provider, in this process,
in a directory holding the ``cat.png`` and ``report.pdf`` the media examples open. Two are left
to their own tests: the OpenTelemetry one sets the process's global tracer provider (once per
process), and the Ray one needs a cluster and S3.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_LEFT_OUT = ("opentelemetry", "import ray")

# a 1x1 PNG and a one-page PDF, as small as their formats allow
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)
PDF = b"%PDF-1.4\n1 0 obj<</Type/Page>>endobj\ntrailer<<>>\n%%EOF\n"


# what the text around a block says it prints, keyed by a line of the block
_SAYS = {
    'ImagePart.from_path("cat.png")': "image image/png\n",
    'DocumentPart.from_path("report.pdf"': "document Q3 report {'enabled': True}\n",
    "cache_messages=True": "reply 2: 4 written, 806 read\n",
    "requests_received(fake.base_url)": "2 requests received, the same body twice\n",
    "MockTransport(answer)": "ReadError connection reset\nOverloadedError HTTP 529",
    "batch_results(": "100 ok of 100\n['fine']\n",
}


def _programs() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for document in sorted(DOCS.glob("*.md")):
        text = document.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            code = match.group(1)
            if "asyncio.run(main())" in code and not any(word in code for word in _LEFT_OUT):
                line = text.count("\n", 0, match.start(1)) + 1
                found.append((f"{document.name}:{line}", code))
    return found


def test_the_programs_are_found() -> None:
    names = [name.split(":")[0] for name, _ in _programs()]
    assert {"batch.md", "content.md", "fake-provider.md", "testing.md"} <= set(names)


@pytest.mark.parametrize(("where", "code"), _programs(), ids=[name for name, _ in _programs()])
def test_docs_program_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cat.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {"__name__": "__main__"})
    printed = out.getvalue()
    assert printed.strip(), f"{where} printed nothing"
    for marker, expected in _SAYS.items():
        if marker in code:
            assert expected in printed, f"{where}: the text says it prints {expected!r}"
