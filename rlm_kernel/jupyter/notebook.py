"""Notebook mode: every root step is a real cell, run by the kernel, its output kept in the notebook.

The kernel talks to the JupyterLab extension over one comm (target ``rlm_kernel``, protocol in
``docs/protocol.md``). A ``%%rlm`` cell starts a :class:`NotebookRun` and returns at once; the
root LM is asked on the sub-call pool's thread, and everything that touches the run happens on
the kernel's own event loop. The kernel is idle between steps, so buttons, interrupts and other
cells keep working. When a step's cell has run, its code (perhaps edited) and output go back to
the run, and the next step is proposed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import Any

from ..driver import ask_root
from ..engine import Action, AskRoot, Execute, Finish, ResolveFinal
from ..errors import RLMError, RunCancelled
from ..events import Event, RootToken
from ..executors.base import ExecResult
from ..executors.local import capture_output
from ..lm.base import Completion
from ..repl import compact_traceback
from ..trajectory import notebook_metadata
from . import safe
from .render import render_run
from .state import RunState

__all__ = ["PROTOCOL_VERSION", "COMM_TARGET", "NotebookMode", "NotebookRun"]

PROTOCOL_VERSION = 1
COMM_TARGET = "rlm_kernel"
FLUSH_S = 0.1  # at most ten view updates and event batches a second


def _cell_frame(filename: str) -> bool:
    """Frames of notebook cells (ipykernel names them after a temp file) and of RLM steps."""
    return "ipykernel_" in filename or filename.startswith("<")


class NotebookMode:
    """One per kernel: the comm with the front end, and the run in progress."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.shell = kernel.shell
        self.comm: Any = None
        self.active: NotebookRun | None = None
        self._last_result: Any = None
        kernel.comm_manager.register_target(COMM_TARGET, self._on_open)
        self.shell.events.register("post_run_cell", self._post_run_cell)

    @property
    def connected(self) -> bool:
        return self.comm is not None

    # -- the comm ----------------------------------------------------------------------------
    def _on_open(self, comm: Any, msg: dict[str, Any]) -> None:
        """A front end connected (a page reload reconnects): it learns the run in progress and the
        step it may have missed."""
        self.comm = comm
        comm.on_msg(self._on_msg)
        comm.on_close(lambda _msg: self._on_close(comm))
        self.send("welcome", version=PROTOCOL_VERSION, active=self.active.run_id if self.active else None)
        if self.active is not None:
            self.active.reconnected()

    def _on_close(self, comm: Any) -> None:
        if self.comm is comm:  # another view of the notebook closing leaves this one connected
            self.comm = None

    def send(self, kind: str, **data: Any) -> None:
        if self.comm is not None:
            self.comm.send({"type": kind, **data})

    def _on_msg(self, msg: dict[str, Any]) -> None:
        data = msg["content"]["data"]
        kind = data.get("type")
        run = self.active
        if kind == "set_mode" and run is None and data.get("mode") in ("auto", "step"):
            self.shell.user_ns["__rlm_magics__"].mode = data["mode"]  # for the next run
            return
        if run is None or data.get("run_id") not in (None, run.run_id):
            return
        if kind == "cell_inserted":
            run.cell_inserted(int(data["step"]), str(data["cell_id"]))
        elif kind == "set_mode" and data.get("mode") in ("auto", "step"):
            run.set_mode(data["mode"])
        elif kind == "pause":
            run.pause()
        elif kind == "resume":
            run.resume()
        elif kind == "stop":
            run.stop()
        elif kind == "hint" and data.get("text"):
            run.hint(str(data["text"]))

    # -- runs --------------------------------------------------------------------------------------
    def start(self, job: Any, origin_cell: str | None) -> NotebookRun:
        if self.active is not None:
            from IPython.core.error import UsageError

            raise UsageError("An RLM run is active in this notebook: finish it, or %rlm stop, first.")
        self.active = NotebookRun(self, job, origin_cell, asyncio.get_running_loop())
        self.active.start()
        return self.active

    def ended(self, run: NotebookRun) -> None:
        if self.active is run:
            self.active = None

    # -- cells, as the kernel executes them ------------------------------------------------------
    def _post_run_cell(self, result: Any) -> None:
        self._last_result = result

    async def execute(self, run_cell: Any, code: str, cell_id: str | None) -> Any:
        """Run one execute request; while a run is active, catch what the cell printed for the root.
        Cells of ``%rlm`` commands (a hint, stop) steer the run and are not part of it."""
        run = self.active
        if run is None or run.done or code.lstrip().startswith(("%rlm", "%%rlm")):
            return await run_cell()
        run.before_cell(cell_id)
        started = time.perf_counter()
        self._last_result = None
        with capture_output(tee=True) as (out, err):
            reply = await run_cell()
        result, interrupted = self._result(out.getvalue(), err.getvalue(), started)
        run.after_cell(cell_id, code, result, interrupted)
        return reply

    def _result(self, stdout: str, stderr: str, started: float) -> tuple[ExecResult, bool]:
        res = self._last_result
        value = error = None
        interrupted = False
        if res is not None:
            if res.result is not None:
                value = repr(res.result)
            exc = res.error_in_exec or res.error_before_exec
            if exc is not None:
                interrupted = isinstance(exc, KeyboardInterrupt)
                error = compact_traceback(exc, keep=_cell_frame)
        return ExecResult(stdout, stderr, value, error, time.perf_counter() - started), interrupted


class NotebookRun:
    """Drives one RLMRun from notebook cells. Every method runs on the kernel's event loop."""

    def __init__(
        self, mode: NotebookMode, job: Any, origin_cell: str | None, loop: asyncio.AbstractEventLoop
    ):
        from IPython.display import HTML, display

        self.mode = mode
        self.job = job
        self.loop = loop
        self.step_mode = job.settings["mode"]
        self.paused = False
        self.held: Action | None = None
        self.pending: Execute | None = None
        self.pending_cell: str | None = None
        self.last_cell = origin_cell
        self.origin_cell = origin_cell
        self.state = RunState()
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._flush_scheduled = False
        self._writing_sent = 0
        self._final = False
        self._root_future: concurrent.futures.Future[Completion] | None = None
        self.open = job.rlm.open(
            job.context, job.question, namespace=mode.shell.user_ns, subscribers=(self._on_event,)
        )
        self.parts = self.open.parts
        self.run = self.parts.run
        self.result: Any = None
        self._display = display(HTML(render_run(self.state)), display_id=True)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def done(self) -> bool:
        return self.result is not None

    # -- events: to the %%rlm cell's view and the side panel, throttled ----------------------------
    def _on_event(self, event: Event) -> None:
        with self._lock:
            self.state.apply(event)
            if not isinstance(event, RootToken):
                self._events.append(event.to_dict())
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        # A timer thread, not the kernel's loop: while a step's cell runs, the loop is busy, and the
        # side panel and the view should still move. Comm and display messages are thread-safe.
        timer = threading.Timer(FLUSH_S, self._flush)
        timer.daemon = True
        timer.start()

    def _flush(self) -> None:
        from IPython.display import HTML

        with self._lock:  # held while sending, so a late timer cannot overwrite the final view
            self._flush_scheduled = False
            events, self._events = self._events, []
            if events:
                self.mode.send("events", run_id=self.run_id, events=events)
            writing = self.state.streamed_tokens
            if writing and writing != self._writing_sent:  # the root's reply as it is written
                self.mode.send("root_progress", run_id=self.run_id, turn=self.run.turns, tokens=writing)
            self._writing_sent = writing
            if not self._final:  # the final view, with the trajectory in its metadata, is _finish's
                self._display.update(HTML(render_run(self.state)))

    # -- the loop ------------------------------------------------------------------------------------
    def reconnected(self) -> None:
        """Tell a newly opened front end where the run stands, and propose again a step it missed."""
        self.mode.send("run_state", **self._state())
        if self.pending is not None:
            self._propose(self.pending)

    @property
    def _reply(self) -> str:
        """The root's reply that proposed the pending step."""
        return next((m["content"] for m in reversed(self.run.messages) if m["role"] == "assistant"), "")

    def _propose(self, action: Execute) -> None:
        self.mode.send(
            "propose_step",
            run_id=self.run_id,
            step=action.step,
            code=action.code,
            reply=self._reply,
            after_cell_id=self.last_cell,
            mode=self.step_mode,
        )

    def start(self) -> None:
        self.mode.send(
            "run_started",
            run_id=self.run_id,
            cell_id=self.origin_cell,
            mode=self.step_mode,
            question=self.job.question,
            model=self.run.model,
        )
        self._perform(self.run.start())

    def _perform(self, action: Action) -> None:
        if self.done:
            return
        if not isinstance(action, Finish) and self.paused:
            self.held = action
            return
        try:
            self.parts.tree.budget.check()
        except RLMError as exc:
            action = self.run.abort(exc)
        if isinstance(action, AskRoot):
            self._ask(action)
        elif isinstance(action, Execute):
            self.pending, self.pending_cell = action, None
            self._propose(action)
        elif isinstance(action, ResolveFinal):
            self._perform(self.run.receive_final(*self.parts.scaffold.resolve(action.directive)))
        elif isinstance(action, Finish):
            self._finish(action)

    def _ask(self, action: AskRoot) -> None:
        future = self.parts.tree.pool.submit(ask_root(self.parts, action), bounded=False)
        self._root_future = future
        future.add_done_callback(lambda f: self.loop.call_soon_threadsafe(self._replied, f))

    def _replied(self, future: concurrent.futures.Future[Completion]) -> None:
        if self.done or future is not self._root_future:
            return
        try:
            completion = future.result()
        except concurrent.futures.CancelledError:
            self._perform(self.run.abort(RunCancelled()))
            return
        except RLMError as exc:
            self._perform(self.run.abort(exc))
            return
        self._perform(self.run.receive_reply(completion))

    # -- cells ---------------------------------------------------------------------------------------
    def cell_inserted(self, step: int, cell_id: str) -> None:
        if self.pending is not None and self.pending.step == step:
            self.pending_cell = cell_id

    def _is_step(self, cell_id: str | None) -> bool:
        return self.pending is not None and cell_id is not None and cell_id == self.pending_cell

    def before_cell(self, cell_id: str | None) -> None:
        self.parts.subcalls.step = self.pending.step if self._is_step(cell_id) else self.run.steps + 1

    def after_cell(
        self, cell_id: str | None, code: str, result: ExecResult, interrupted: bool = False
    ) -> None:
        if self.done:
            return
        scaffold = self.parts.scaffold
        if self._is_step(cell_id):
            step = self.pending
            assert step is not None
            if code.strip() != step.code.strip():
                self.run.human_edit(step.step, step.code, code)
            self.pending, self.pending_cell, self.last_cell = None, None, cell_id
            restored = scaffold.restore()
            self.mode.send(
                "step_executed",
                run_id=self.run_id,
                step=step.step,
                cell_id=cell_id,
                edited=code.strip() != step.code.strip(),
                error=result.error is not None,
            )
            action = self.run.receive_execution(
                result, answer_ready=scaffold.ready, answer=scaffold.content, restored=restored
            )
            # An interrupted step is recorded with its output, then the run stops where it was.
            self._perform(self.run.abort(RunCancelled("interrupted")) if interrupted else action)
            return
        if interrupted:
            self._perform(self.run.abort(RunCancelled("interrupted")))
            return
        self.run.human_step(code, result.text(), result.error, result.elapsed_s)
        scaffold.restore()
        if scaffold.ready:
            self._perform(self.run.human_answer(scaffold.content))

    # -- controls ------------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        self.step_mode = mode
        self.mode.send("run_state", **self._state())

    def pause(self) -> None:
        self.paused = True
        self.mode.send("run_state", **self._state())

    def resume(self) -> None:
        self.paused = False
        self.mode.send("run_state", **self._state())
        held, self.held = self.held, None
        if held is not None:
            self._perform(held)

    def stop(self) -> None:
        if self.done:
            return
        self.paused = False
        self.parts.tree.cancel()
        self._perform(self.run.abort(RunCancelled()))

    def hint(self, text: str) -> None:
        if not self.done:
            self.run.hint(text)

    def _state(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "mode": self.step_mode,
            "paused": self.paused,
            "waiting_for": self.pending.step if self.pending else None,
        }

    def _finish(self, finish: Finish) -> None:
        """Release the run; its view in the ``%%rlm`` cell ends with the answer or the reason it stopped,
        and keeps the trajectory in its metadata."""
        from IPython.display import HTML

        self.result = self.open.close(finish)
        self.mode.shell.user_ns[self.job.out] = self.result
        self._flush()
        with self._lock:
            self._final = True
            self._display.update(
                HTML(render_run(self.state)), metadata=notebook_metadata(self.result.trajectory)
            )
        self.mode.send(
            "run_finished",
            run_id=self.run_id,
            answer=finish.response,
            answer_markdown=None if finish.response is None else safe.markdown_source(finish.response),
            error=finish.error,
            after_cell_id=self.last_cell,
            usage=str(self.result.usage),
        )
        self.mode.ended(self)
