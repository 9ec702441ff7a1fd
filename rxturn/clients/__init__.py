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

from typing import TYPE_CHECKING

from .._exports import lazy_exports

if TYPE_CHECKING:  # what type checkers read; at run time, _HOMES below
    from ._base import BatchingModelClient as BatchingModelClient
    from ._base import ModelClient as ModelClient
    from ._base import keeps_thinking as keeps_thinking
    from .anthropic import AnthropicClient as AnthropicClient
    from .ollama import OllamaClient as OllamaClient
    from .openai import OpenAIClient as OpenAIClient
    from .openai_responses import OpenAIResponsesClient as OpenAIResponsesClient

#: Each public name and its module, imported on first use of the name (PEP 562).
_HOMES: dict[str, str] = {
    "BatchingModelClient": "._base",
    "ModelClient": "._base",
    "keeps_thinking": "._base",
    "AnthropicClient": ".anthropic",
    "OllamaClient": ".ollama",
    "OpenAIClient": ".openai",
    "OpenAIResponsesClient": ".openai_responses",
}

if not TYPE_CHECKING:  # type checkers take the public names from the imports above
    __all__ = sorted(_HOMES)
    # hidden from type checkers too: a name that is not public is then an error there
    __getattr__, __dir__ = lazy_exports(globals(), _HOMES)
