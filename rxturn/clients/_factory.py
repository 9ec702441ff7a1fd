"""One client by provider name: what ``rxturn chat`` and ``rxturn batch`` build from a flag."""

from __future__ import annotations

from typing import Any

__all__ = ["client_for"]


def client_for(provider: str, model: str, api_key: str | None, **settings: Any) -> Any:
    """The client of ``provider`` for ``model`` (Ollama takes no key); ``settings`` are the
    clients' connection settings (``base_url``, ``transport``, …)."""
    if provider == "anthropic":
        from .anthropic import AnthropicClient

        return AnthropicClient(model, api_key=api_key, **settings)
    if provider == "openai":
        from .openai import OpenAIClient

        return OpenAIClient(model, api_key=api_key, **settings)
    if provider == "openai-responses":
        from .openai_responses import OpenAIResponsesClient

        return OpenAIResponsesClient(model, api_key=api_key, **settings)
    from .ollama import OllamaClient

    return OllamaClient(model, **settings)
