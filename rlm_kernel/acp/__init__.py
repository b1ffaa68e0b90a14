"""An RLM for every Agent Client Protocol client (Zed, Jupyter AI's ACP client, ...):
``python -m rlm_kernel.acp`` (docs/acp.md). Needs the ``acp`` extra (``agent-client-protocol``).

    agent.py     the agent: sessions, prompts, permission requests, cancel, load
    saved.py     sessions kept on disk for session/load; their conversation from the trajectories
    blocks.py    a prompt's content blocks as a question and a context
    updates.py   a run's events as session updates
    stdio.py     stdin and stdout for the protocol alone
    __main__.py  the command: settings from flags and the environment
"""

from __future__ import annotations

__all__ = ["RLMAgent"]


def __getattr__(name: str) -> object:
    if name == "RLMAgent":  # imported when asked for: the package's docstring needs no SDK
        from .agent import RLMAgent

        return RLMAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
