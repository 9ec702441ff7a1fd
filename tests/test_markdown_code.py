"""The Python blocks of the Markdown docs pass the same lint as the code.

``ruff format --check .`` formats the fenced Python blocks of every Markdown file itself;
``ruff check`` does not read Markdown, so this test hands it each block of README.md,
docs/*.md and benchmarks/README.md, as a file padded so its line numbers are the document's.
A block may go on from the text around it, as in a REPL or a notebook: names it did not define
(F821) and a top-level ``await`` (F704) are allowed; every other rule holds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("benchmarks/*.md")])
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """Each fenced ``python`` block: the line its code starts on (1-based), and the code."""
    return [
        (text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in _FENCE.finditer(text)
    ]


def test_the_extractor_finds_blocks_and_their_lines() -> None:
    text = "# title\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n```python\ny = 2\nz = 3\n```\n"
    assert python_blocks(text) == [(4, "x = 1\n"), (11, "y = 2\nz = 3\n")]


def test_every_python_block_passes_ruff_check(tmp_path: Path) -> None:
    written = 0
    for document in DOCUMENTS:
        for line, code in python_blocks(document.read_text(encoding="utf-8")):
            name = document.relative_to(ROOT).as_posix().replace("/", "__")
            (tmp_path / f"{name}__line{line}.py").write_text("\n" * (line - 1) + code)
            written += 1
    assert written >= 10, "the docs' Python examples were not found"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--extend-ignore",
            "F821,F704",
            "--output-format",
            "concise",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
