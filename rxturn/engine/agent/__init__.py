"""The agent loop and its tools.

- :mod:`~rxturn.engine.agent._loop`: :class:`AgentLoop`, turns and tool calls until the model
  stops asking for tools (or the round limit);
- :mod:`~rxturn.engine.agent.tools`: :class:`Tool`, :class:`ToolRegistry` and :func:`tool`.
"""
