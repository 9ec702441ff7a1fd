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

from .._lazy import LazyExports

if TYPE_CHECKING:  # the table of public names (rxturn._lazy)
    from ._base import BatchingModelClient as BatchingModelClient
    from ._base import ModelClient as ModelClient
    from ._base import keeps_thinking as keeps_thinking
    from .anthropic import AnthropicClient as AnthropicClient
    from .ollama import OllamaClient as OllamaClient
    from .openai import OpenAIClient as OpenAIClient
    from .openai_responses import OpenAIResponsesClient as OpenAIResponsesClient

_exports = LazyExports(globals())
__getattr__ = _exports.resolve
__dir__ = _exports.names
