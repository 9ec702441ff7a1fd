"""The README's quickstart runs as written, offline."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quickstart_runs_offline() -> None:
    text = README.read_text()
    section = text.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    out = subprocess.run(
        [sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "Hello, resilient world!" in out.stdout
    assert "2 attempts" in out.stdout  # the scripted 529 was absorbed by one retry


def test_the_readme_names_exist() -> None:
    import rxturn
    from rxturn.clients import OpenAIClient

    for name in ("AnthropicClient", "OpenAIClient", "OllamaClient", "FallbackManager"):
        assert hasattr(rxturn, name)
    assert callable(OpenAIClient.ollama) and callable(OpenAIClient.from_env)
    assert callable(rxturn.AnthropicClient.from_env)
