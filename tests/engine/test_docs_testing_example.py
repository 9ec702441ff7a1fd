"""docs/testing.md's example runs as written: a user's conftest line and test file, in a fresh
pytest process (strict asyncio mode, outside this suite's configuration)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


@pytest.mark.slow
def test_the_documented_example_passes(tmp_path: Path) -> None:
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    conftest = next(b for b in blocks if b.startswith("pytest_plugins"))
    example = next(b for b in blocks if "def test_" in b)
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_example.py").write_text(example)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\n")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout
