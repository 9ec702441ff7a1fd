"""Where the recorded provider streams live, for every test that reads them.

``$RXTURN_FIXTURES`` if set, else the copy vendored in ``tests/fixtures``, else the shared corpus
beside the repository (``../shared/fixtures``). Missing fixtures fail loudly: an empty glob
would let every parametrised test pass vacuously.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "ANTHROPIC_FIXTURES",
    "FIXTURES",
    "OPENAI_FIXTURES",
    "RESPONSES_FIXTURES",
    "fixtures_root",
]

_TESTS = Path(__file__).resolve().parent


def fixtures_root() -> Path:
    candidates = [
        Path(os.environ["RXTURN_FIXTURES"]) if os.environ.get("RXTURN_FIXTURES") else None,
        _TESTS / "fixtures",
        _TESTS.parent.parent / "shared" / "fixtures",
    ]
    for candidate in candidates:
        if candidate is not None and (candidate / "anthropic").is_dir():
            return candidate
    raise RuntimeError(f"recorded stream fixtures not found (looked in {candidates})")


FIXTURES = fixtures_root()
ANTHROPIC_FIXTURES = sorted((FIXTURES / "anthropic").glob("*.sse"))
OPENAI_FIXTURES = sorted((FIXTURES / "openai").glob("*.sse"))
#: OpenAI Responses API streams: vendored here only (tests/fixtures/README.md says where from)
RESPONSES_FIXTURES = sorted((_TESTS / "fixtures" / "openai-responses").glob("*.sse"))
