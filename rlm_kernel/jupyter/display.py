"""The live view of a run in a notebook: the run's HTML in pieces (its head, each step, the reply
being written; one ipywidgets HTML each), a Stop button, and in step mode an editor for the proposed
code. Replaced by the whole HTML, static, when the run ends.

Events may arrive from any thread; the view is redrawn at most ``1 / min_interval`` times a second
whatever the fan-out, and a redraw sends only the pieces whose HTML changed (a trait set to its own
value sends nothing), so a long run's finished steps are not sent again on every update.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from ..driver import Regenerate
from ..events import Event, RunStarted
from ..risk import risk_of
from ..trajectory import notebook_metadata
from ..view import RunState
from . import safe
from .render import render_pieces, render_run
from .throttle import Throttle

__all__ = ["WidgetView", "StepApproval"]


class WidgetView:
    def __init__(self, *, on_stop: Callable[[], None], min_interval: float = 0.1) -> None:
        import ipywidgets as widgets

        self.state = RunState()
        self.body = widgets.VBox()  # one HTML widget per piece of the run
        self.stop_button = widgets.Button(
            description="Stop",
            icon="stop",
            button_style="danger",
            tooltip="Cancel every call in flight and keep the partial result",
        )
        self.stop_button.on_click(lambda _: self._stop(on_stop))
        self.controls = widgets.HBox([self.stop_button])
        self.box = widgets.VBox([self.controls, self.body])
        self._lock = threading.Lock()
        self._throttle = Throttle(self._flush, min_interval)
        self._handle = None
        self.events: list[Event] = []

    def _stop(self, on_stop: Callable[[], None]) -> None:
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        with self._lock:
            self.state.stopping = True
        self._throttle.poke()
        on_stop()

    def waiting_for(self, step: int | None) -> None:
        """A step waits for the human (step mode), or no longer does: the status says so."""
        with self._lock:
            self.state.waiting_for = step
        self._throttle.poke()

    def human_runs(self, step: int, code: str) -> None:
        """The human ran ``step`` with ``code``: shown at once, for the whole of a long step."""
        with self._lock:
            self.state.human_runs(step, code)
        self._throttle.poke()

    def show(self) -> None:
        from IPython.display import display

        self._draw(render_pieces(self.state))
        self._handle = display(self.box, display_id=True)

    def __call__(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, RunStarted) and event.parent_id is None and self.state.run_id is not None:
                # Another run from its start: a vote's winning root, shown after the greedy one.
                self.state, self.events = RunState(), []
            self.events.append(event)
            self.state.apply(event)
        self._throttle.poke()

    def _flush(self) -> None:
        with self._lock:
            pieces = render_pieces(self.state)
        self._draw(pieces)

    def _draw(self, pieces: list[str]) -> None:
        import ipywidgets as widgets

        shown = list(self.body.children)
        shown += [widgets.HTML() for _ in range(len(pieces) - len(shown))]
        for widget, html in zip(shown, pieces, strict=False):  # more shown: a shorter run now
            widget.value = html
        if len(shown) != len(self.body.children) or len(pieces) < len(shown):
            self.body.children = tuple(shown[: len(pieces)])
            for widget in shown[len(pieces) :]:  # a vote's next root starts over
                widget.close()

    def html(self) -> str:
        """The run as the widget shows it now."""
        return "".join(widget.value for widget in self.body.children)

    def finish(self) -> str:
        """Stop updating; leave the run as static HTML in place of the widget, with its trajectory
        in the output's metadata (``rlm_kernel.trajectory.from_notebook`` reads it back)."""
        from IPython.display import HTML

        self._throttle.close()
        with self._lock:
            html = render_run(self.state, answer=False)  # the Markdown answer follows it
            events = list(self.events)
        if self._handle is not None:
            self._handle.update(HTML(html), metadata=notebook_metadata(events))
        self.box.close()
        for widget in self.body.children:
            widget.close()
        self.body.close()
        self.stop_button.close()
        self.controls.close()
        return html


class StepApproval:
    """Step mode for the magics: each proposed step waits in an editor until the human runs it.

    Awaited on the kernel's event loop, which stays free, so the Run button's click is heard.
    """

    def __init__(self, view: WidgetView, *, only_risky: bool = False) -> None:
        import ipywidgets as widgets

        self.view = view
        self.only_risky = only_risky  # confirm-risky: a step the scan passes runs at once
        self.reason = widgets.HTML()
        self.editor = widgets.Textarea(layout=widgets.Layout(width="100%", height="12em"))
        self.run_button = widgets.Button(description="Run step", icon="play", button_style="success")
        self.run_button.on_click(self._run)
        self.regenerate_button = widgets.Button(
            description="Regenerate",
            icon="refresh",
            tooltip="Ask the root for another proposal for this step",
        )
        self.regenerate_button.on_click(self._regenerate)
        self._future: asyncio.Future[str | Regenerate] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _run(self, _button: object) -> None:
        if self._future is not None and self._loop is not None and not self._future.done():
            self._loop.call_soon_threadsafe(self._future.set_result, self.editor.value)

    def _regenerate(self, _button: object) -> None:
        if self._future is not None and self._loop is not None and not self._future.done():
            self._loop.call_soon_threadsafe(self._future.set_result, Regenerate())

    def cancel(self) -> None:
        """Stop waiting (the Stop button): the awaiting driver sees a cancellation."""
        if self._future is not None and self._loop is not None and not self._future.done():
            self._loop.call_soon_threadsafe(self._future.cancel)

    async def __call__(self, step: int, code: str) -> str | Regenerate:
        reason = risk_of(code) if self.only_risky else None
        if self.only_risky and reason is None:
            return code
        self._loop = asyncio.get_running_loop()
        self._future = self._loop.create_future()
        self.editor.value = code
        why = f"Step {step} waits for you: {reason}." if self.only_risky else f"Step {step} waits for you."
        self.reason.value = f"<b>{safe.text(why)}</b>"
        self.view.controls.children = (self.view.stop_button, self.run_button, self.regenerate_button)
        self.view.box.children = (self.view.controls, self.view.body, self.reason, self.editor)
        self.view.waiting_for(step)
        try:
            chosen = await self._future
            if isinstance(chosen, str):
                self.view.human_runs(step, chosen)
            return chosen
        finally:
            self.view.waiting_for(None)
            self.view.box.children = (self.view.controls, self.view.body)
            self.view.controls.children = (self.view.stop_button,)
