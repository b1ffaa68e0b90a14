"""A magic's run shown in its cell: the job a ``%rlm`` line asks for, the run as ``%rlm stop`` and
``%rlm hint`` reach it, the view it is shown in (the widget, or plain text) and how that view
ends, and the answer shown after it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..rewind import Branch
from ..rlm import RLM, RLMResult
from ..trajectory import NOTEBOOK_KEY, notebook_metadata
from . import safe

__all__ = ["InCell", "Job", "cell_view", "close_view", "show_result"]


@dataclass
class Job:
    """What a ``%rlm`` line or ``%%rlm`` cell asks for, checked and ready to run."""

    rlm: RLM
    settings: dict[str, Any]
    context: Any
    question: str | None
    out: str
    branch: Branch | None = None  # --continue-from: the recorded run this one continues
    session: str | None = None  # --session: the session's name


@dataclass
class InCell:
    """A run whose steps are shown in its cell (the widget or plain text)."""

    rlm: RLM
    approval: Any = None  # StepApproval in step mode

    def stop(self) -> None:
        self.rlm.cancel()
        if self.approval is not None:
            self.approval.cancel()

    def hint(self, text: str) -> None:
        self.rlm.hint(text)


def cell_view(widget: bool, on_stop: Callable[[], None]) -> Any:
    """The live widget where a kernel can show one, else plain text progress on the cell's stdout."""
    if widget:
        from .display import WidgetView

        view = WidgetView(on_stop=on_stop)
        view.show()
        return view
    from ..console import ConsoleView

    return ConsoleView(sys.stdout, stream_tokens=False)


def close_view(view: Any, mode: str) -> None:
    """A widget view leaves static HTML in its place, with the run's events and the mode it ran in
    in the output's metadata (the runs panel shows a reopened notebook's runs from them); plain
    text needs no ending."""
    from IPython.display import HTML

    from .display import WidgetView

    if isinstance(view, WidgetView):
        html = view.finish()
        handle = view._handle  # the display its finish updated: display.py keeps no mode
        if handle is not None:
            metadata = notebook_metadata(view.events)
            metadata[NOTEBOOK_KEY]["mode"] = mode
            handle.update(HTML(html), metadata=metadata)


def show_result(result: RLMResult, out: str, answer: str) -> None:
    """Under the run: which of the user's names were put back, the answer (``answer`` is markdown or
    text), and the error, if any."""
    from IPython.display import display

    if result.restored_names:
        names = ", ".join(f"`{n}`" for n in result.restored_names)
        print(f"Your own {names} put back after the run; its answer is in {out}.response.")
    if result.response is not None:
        # LM text never goes out as Markdown or live HTML: a trusted output would run its script.
        text = result.response
        if not isinstance(text, str):  # a typed answer (output_type): its value as Python shows it
            text = repr(text)
        shown = {"text/plain": text}
        if answer == "markdown" and isinstance(result.response, str):
            shown["text/html"] = safe.markdown_html(text)
        display(shown, raw=True)
    if result.error:
        print(f"RLM: {result.error}", file=sys.stderr)
