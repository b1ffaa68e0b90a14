"""An RLM persona for Jupyter AI's chat: ``@RLM question @variable`` runs ``%%rlm`` over a
variable of the chat's notebook, in that notebook's kernel (docs/jupyter-ai.md). Needs the
``jupyter-ai`` extra.

    request.py     a chat message as a question and the variables it names; the cell it runs
    transcript.py  the kernel's messages about a run folded into one safe chat message
    kernel.py      the notebook's kernel: its names, a cell run and its messages, an interrupt
    live_cell.py   the run's cell in the open notebook, through the live (collaborative) document
    persona.py     the persona: finds the notebook, runs the cell, streams, stops
"""

from __future__ import annotations

__all__ = ["RLMPersona"]


def __getattr__(name: str) -> object:
    if name == "RLMPersona":  # imported when asked for: the pure modules need no Jupyter AI
        from .persona import RLMPersona

        return RLMPersona
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
