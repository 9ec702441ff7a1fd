"""Provider clients: Anthropic Messages, OpenAI Chat Completions (and compatibles), the OpenAI
Responses API, Ollama native.

Every client implements :class:`~rxturn.clients._base.ModelClient`: ``stream(request, options)``
is a cold Observable of :data:`~rxturn.events.StreamEvent` (one HTTP request per subscription),
``await create(request, options)`` the non-streaming reply. Clients are resolved lazily, and they
load aiohttp only when they send their first request, so importing this package stays light.

Examples:
    >>> from rxturn.clients import AnthropicClient
    >>> AnthropicClient(base_url="http://127.0.0.1:8080")
    AnthropicClient(model='claude-sonnet-4-20250514', base_url='http://127.0.0.1:8080')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._base import BatchingModelClient, ModelClient, keeps_thinking

__all__ = [
    "AnthropicClient",
    "BatchingModelClient",
    "ModelClient",
    "OllamaClient",
    "OpenAIClient",
    "OpenAIResponsesClient",
    "keeps_thinking",
]

_LAZY = {
    "AnthropicClient": "rxturn.clients.anthropic",
    "OpenAIClient": "rxturn.clients.openai",
    "OpenAIResponsesClient": "rxturn.clients.openai_responses",
    "OllamaClient": "rxturn.clients.ollama",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rxturn.clients' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .anthropic import AnthropicClient
    from .ollama import OllamaClient
    from .openai import OpenAIClient
    from .openai_responses import OpenAIResponsesClient
