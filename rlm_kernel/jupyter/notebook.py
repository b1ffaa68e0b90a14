"""Notebook mode: every root step is a real cell, run by the kernel, its output kept in the notebook.

The kernel talks to the JupyterLab extension over a comm (target ``rlm_kernel``, protocol in
``docs/protocol.md``), one per view of the notebook; it sends to the newest view still open.
A ``%%rlm`` cell starts a :class:`NotebookRun` and returns at once; the root LM is asked on the
sub-call pool's thread, and everything that touches the run happens on the kernel's own event
loop. The kernel is idle between steps, so buttons, interrupts and other cells keep working. When a
step's cell has run, its code (perhaps edited) and output go back to the run: the next is proposed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from functools import partial
from typing import Any

from ..engine import LM_CALLS, AskRoot, Compact, Execute, Finish, Verify
from ..errors import RLMError, RunCancelled
from ..events import Event, RootToken
from ..executors.base import ExecResult
from ..executors.local import capture_output
from ..foreign import attempt
from ..lm.base import Completion
from ..lm_calls import call_lm
from ..messages import (
    COMM_TARGET,
    PROTOCOL_VERSION,
    CellInserted,
    CellOfRun,
    EventsMsg,
    HintMsg,
    Message,
    Pause,
    ProposeStep,
    RegenerateMsg,
    Resume,
    RootProgress,
    RunFinished,
    RunStartedMsg,
    RunStateMsg,
    SetMode,
    StepExecuted,
    Stop,
    Welcome,
    parse_frontend,
    version_problem,
)
from ..repl import compact_traceback
from ..risk import capped, risk_of
from ..root_loop import Loop, Ran, Regenerate, Wait
from ..trajectory import NOTEBOOK_KEY, notebook_metadata
from ..view import RunState, rlm_command
from . import safe
from .active import ActiveRun
from .flow import PAUSED, Input, Phase, advance
from .render import render_run
from .throttle import Throttle

__all__ = ["PROTOCOL_VERSION", "COMM_TARGET", "NotebookMode", "NotebookRun"]

FLUSH_S = 0.1  # at most ten view updates and event batches a second


def _cell_frame(filename: str) -> bool:
    """Frames of notebook cells (ipykernel names them after a temp file) and of RLM steps."""
    return "ipykernel_" in filename or filename.startswith("<")


class NotebookMode:
    """One per kernel: the comms with the front end's views of the notebook, and the run in
    progress. ``magics`` are the kernel's ``%rlm`` magics, whose settings a ``set_mode`` between
    runs changes; ``runs`` is the kernel's one run in progress, which the magics share."""

    def __init__(self, kernel: Any, magics: Any, runs: ActiveRun) -> None:
        self.kernel = kernel
        self.shell = kernel.shell
        self.magics = magics
        self.runs = runs
        self.comms: list[Any] = []  # open, oldest first; the last one is the owner, sent to
        self.refused: str | None = None  # why the last front end to connect was not taken
        self.other_runs: set[str] = set()  # cells about to run whose metadata names another run
        self._last_result: Any = None
        kernel.comm_manager.register_target(COMM_TARGET, self._on_open)
        self.shell.events.register("post_run_cell", self._post_run_cell)

    @property
    def comm(self) -> Any:
        """The owner: the newest view still open. The views share one notebook, so one of them
        gets the run's messages and inserts its cells."""
        return self.comms[-1] if self.comms else None

    @property
    def connected(self) -> bool:
        return bool(self.comms)

    @property
    def active(self) -> NotebookRun | None:
        """The run in progress if its steps are cells."""
        run = self.runs.run
        return run if isinstance(run, NotebookRun) else None

    # -- the comm ----------------------------------------------------------------------------
    def _on_open(self, comm: Any, msg: dict[str, Any]) -> None:
        """A front end connected (a page reload reconnects): it learns the run in progress and the
        step it may have missed. One that speaks another protocol is told the kernel's, and the
        kernel goes on showing steps in the ``%%rlm`` cell."""
        data = msg.get("content", {}).get("data") or {}
        problem = version_problem(data.get("version"))
        if problem is not None:
            self.refused = problem
            comm.send(self._welcome().to_dict())
            return
        self.comms.append(comm)
        self.refused = None
        comm.on_msg(self._on_msg)
        comm.on_close(lambda _msg: self._on_close(comm))
        self._greet()

    def _on_close(self, comm: Any) -> None:
        """A view closed. If it was the owner, the previous view still open takes over the run."""
        owner = comm is self.comm
        if comm in self.comms:
            self.comms.remove(comm)
        if owner and self.comms:
            self._greet()

    def _welcome(self) -> Welcome:
        return Welcome(version=PROTOCOL_VERSION, active=self.active.run_id if self.active else None)

    def _greet(self) -> None:
        """Tell the owner the kernel's protocol and where the run in progress stands."""
        self.send(self._welcome())
        if self.active is not None:
            self.active.on(Input.RECONNECT)

    def send(self, message: Message) -> None:
        if self.comm is not None:
            self.comm.send(message.to_dict())

    def _on_msg(self, msg: dict[str, Any]) -> None:
        message = parse_frontend(msg["content"]["data"])
        run = self.active
        if isinstance(message, SetMode) and run is None:
            self.magics.mode = capped(message.mode, self.magics.mode_cap)  # for the next run
            return
        if isinstance(message, CellOfRun):
            if run is not None and message.cell_run_id != run.run_id:
                self.other_runs.add(message.cell_id)
            return
        if message is None or run is None or getattr(message, "run_id", None) not in (None, run.run_id):
            return
        self._to_run(run, message)

    def _to_run(self, run: NotebookRun, message: Message) -> None:
        """A message for the active run, carried out by the run."""
        if isinstance(message, CellInserted):
            run.cell_inserted(message.step, message.cell_id)
        elif isinstance(message, SetMode):
            run.set_mode(capped(message.mode, self.magics.mode_cap))
        elif isinstance(message, Pause):
            run.on(Input.PAUSE)
        elif isinstance(message, Resume):
            run.on(Input.RESUME)
        elif isinstance(message, Stop):
            run.stop()
        elif isinstance(message, HintMsg) and message.text:
            run.hint(message.text)
        elif isinstance(message, RegenerateMsg):
            run.regenerate(message.step)

    # -- runs --------------------------------------------------------------------------------------
    def start(self, job: Any, origin_cell: str | None) -> NotebookRun:
        self.runs.check_free()  # before the run opens its trajectory
        run = NotebookRun(self, job, origin_cell, asyncio.get_running_loop())
        self.runs.claim(run)
        with contextlib.ExitStack() as undo:  # a run that did not start gives its claim back
            undo.callback(self.ended, run)
            run.start()
            undo.pop_all()
        return run

    def ended(self, run: NotebookRun) -> None:
        self.runs.release(run)

    # -- cells, as the kernel executes them ------------------------------------------------------
    def _post_run_cell(self, result: Any) -> None:
        self._last_result = result

    async def execute(self, run_cell: Any, code: str, cell_id: str | None, meta: Any = None) -> Any:
        """Run one execute request; while a run is active, catch what the cell printed for the root.
        Cells of ``%rlm`` commands (a hint, stop) steer the run and are not part of it. ``meta`` is
        the cell's ``rlm`` metadata, which JupyterLab sends with the request: it names the run and
        step a cell of the extension's belongs to, whether or not its comm message came first."""
        run = self.active
        meta = meta if isinstance(meta, dict) else {}
        named = None if "answer" in meta else meta.get("run_id")  # an answer cell names no run of its own
        told = cell_id in self.other_runs  # by cell_of_run, just before this request came
        self.other_runs.discard(cell_id)
        if run is not None and not run.done and (told or named not in (None, run.run_id)):
            return await run.outside(run_cell)
        if run is None or run.done or rlm_command(code) is not None:
            return await run_cell()
        run.claim(cell_id, meta)
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
    """Drives one run's :class:`~rlm_kernel.root_loop.Loop` from notebook cells. Where it stands is a
    :class:`~rlm_kernel.jupyter.flow.Phase`; each thing that happens is an :class:`Input` of the flow
    table, and this class only carries out the table's effects. Every method runs on the kernel's
    event loop."""

    def __init__(
        self, mode: NotebookMode, job: Any, origin_cell: str | None, loop: asyncio.AbstractEventLoop
    ):
        from IPython.display import HTML, display

        self.mode = mode
        self.job = job
        self.event_loop = loop
        self.step_mode = job.settings["mode"]
        self.phase = Phase.IDLE
        self.held: Wait | None = None
        self.pending: Execute | None = None
        self.pending_cell: str | None = None
        self.last_cell = origin_cell
        self.origin_cell = origin_cell
        self.state = RunState()
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._throttle = Throttle(self._flush, FLUSH_S)
        self._writing_sent = 0
        # The LM call the loop waits on: the root's reply, or the sub-model's verdict on an answer.
        self._root_future: concurrent.futures.Future[Completion | str] | None = None
        self.open = job.rlm.open(
            job.context,
            job.question,
            namespace=mode.shell.user_ns,
            subscribers=(self._on_event,),
            branch=job.branch,
        )
        self.parts = self.open.parts
        self.run = self.parts.run
        self.loop = Loop(self.parts)
        self.result: Any = None
        self._display = display(HTML(render_run(self.state, compact=True)), display_id=True)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def done(self) -> bool:
        return self.phase is Phase.DONE

    # -- events: to the %%rlm cell's view and the side panel, throttled ----------------------------
    def _on_event(self, event: Event) -> None:
        with self._lock:
            self.state.apply(event)
            if not isinstance(event, RootToken):
                self._events.append(event.to_dict())
        self._throttle.poke()  # comm and display messages are thread-safe

    def _flush(self) -> None:
        from IPython.display import HTML

        with self._lock:  # held while sending, so a late update cannot overwrite the final view
            events, self._events = self._events, []
            if events:
                self.mode.send(EventsMsg(run_id=self.run_id, events=events))
            writing = self.state.streamed_tokens
            if writing and writing != self._writing_sent:  # the root's reply as it is written
                self.mode.send(RootProgress(run_id=self.run_id, turn=self.run.turns, tokens=writing))
            self._writing_sent = writing
            if not self.done:  # the final view, with the trajectory in its metadata, is _finish's
                self._display.update(HTML(render_run(self.state, compact=True)))

    # -- the table -------------------------------------------------------------------------------------
    def on(self, event: Input, value: Any = None) -> None:
        """One input: the table's next phase, and its effect carried out with ``value``."""
        self.phase, effect = advance(self.phase, event)
        getattr(self, f"_do_{effect.value}")(value)

    def _next(self, wait: Wait | Finish) -> None:
        """What the loop waits for now, as an input: its Finish, an LM's reply, or a step's cell."""
        wait = self._replay(wait)
        if isinstance(wait, Finish):
            self.on(Input.END, wait)
        else:
            self.on(Input.ASK if isinstance(wait, LM_CALLS) else Input.STEP, wait)

    def _replay(self, wait: Wait | Finish) -> Wait | Finish:
        """A branch's inherited steps run here, in the notebook's namespace, before its first
        proposal: their cells are the run's it continues."""
        while isinstance(wait, Execute) and wait.replay:
            outcome, exc = attempt(partial(self.parts.executor.execute, wait.code, step=wait.step))
            if exc is not None:  # any executor failure ends the branch, recorded
                return self.loop.throw(RLMError(f"replaying step {wait.step} failed: {exc}"))
            wait = self.loop.send(Ran(wait.code, outcome))
        return wait

    def start(self) -> None:
        self.mode.send(self._started())
        self._next(self.loop.start())

    # -- what the front end and the kernel say, as inputs ----------------------------------------
    def cell_inserted(self, step: int, cell_id: str) -> None:
        if self.pending is not None and self.pending.step == step:
            self.on(Input.PLACED, cell_id)

    def claim(self, cell_id: str | None, meta: dict[str, Any]) -> None:
        """A cell about to run whose metadata holds the waiting proposal is that step's cell, as
        ``cell_inserted`` would have said: the binding does not depend on which message came first."""
        step = self.pending
        if (
            step is not None
            and self.pending_cell is None
            and cell_id is not None
            and meta.get("run_id") == self.run_id
            and meta.get("step") == step.step
            and meta.get("author") == "root"
            and meta.get("proposed") == step.code
        ):
            self.on(Input.PLACED, cell_id)

    def _is_step(self, cell_id: str | None) -> bool:
        return self.pending is not None and cell_id is not None and cell_id == self.pending_cell

    def before_cell(self, cell_id: str | None) -> None:
        self.parts.subcalls.step = self.pending.step if self._is_step(cell_id) else self.run.steps + 1
        if self._is_step(cell_id):  # the step's line says it runs, paused or not
            assert self.pending is not None
            with self._lock:
                self.state.executing = self.pending.step

    def after_cell(
        self, cell_id: str | None, code: str, result: ExecResult, interrupted: bool = False
    ) -> None:
        if self.done:
            return
        outcome = self.parts.executor.settle(result)
        if self._is_step(cell_id):
            self.on(Input.STEP_RAN, (cell_id, code, result, outcome, interrupted))
        elif interrupted:
            self.on(Input.INTERRUPTED)
        else:
            self.on(Input.HUMAN_RAN, (cell_id, code, result, outcome))

    async def outside(self, run_cell: Any) -> Any:
        """Run a cell of another run (Run All over a finished run's cells) as an ordinary cell: it
        joins no step, and an answer it sets (its old FINAL) is undone, so this run never sees it."""
        scaffold = getattr(self.parts.executor, "scaffold", None)
        kept = dict(scaffold.answer) if scaffold is not None else {}
        try:
            return await run_cell()
        finally:
            if scaffold is not None:
                scaffold.restore()
                scaffold.answer.clear()
                scaffold.answer.update(kept)

    def set_mode(self, mode: str) -> None:
        self.step_mode = mode
        self.mode.send(self._state())

    def stop(self) -> None:
        self.on(Input.STOP)

    def hint(self, text: str) -> None:
        self.on(Input.HINT, text)

    def regenerate(self, step: int) -> None:
        """Ask the root again for the waiting step, if that is the step and the run can."""
        if self.pending is not None and self.pending.step == step and self.run.can_regenerate:
            self.on(Input.REGENERATE)
        else:  # not (or no longer) possible: can_regenerate says so
            self.mode.send(self._state())

    # -- effects ---------------------------------------------------------------------------------------
    def _do_none(self, _: Any) -> None:
        pass

    def _do_ask(self, wait: AskRoot | Verify | Compact) -> None:
        future = self.parts.tree.pool.submit(call_lm(self.parts, wait), bounded=False)
        self._root_future = future
        future.add_done_callback(lambda f: self.event_loop.call_soon_threadsafe(self._replied, f))

    def _replied(self, future: concurrent.futures.Future[Completion | str]) -> None:
        if future is self._root_future:  # else: the call of a run that was stopped, or regenerated
            self._root_future = None
            self.on(Input.REPLIED, future)

    def _do_feed_reply(self, future: concurrent.futures.Future[Completion | str]) -> None:
        try:
            completion = future.result()
        except concurrent.futures.CancelledError:
            self._next(self.loop.throw(RunCancelled()))
        except RLMError as exc:
            self._next(self.loop.throw(exc))
        else:
            self._next(self.loop.send(completion))

    def _do_propose(self, wait: Execute) -> None:
        self.pending, self.pending_cell = wait, None
        self._propose(wait)
        self._show_status()

    def _propose(self, action: Execute) -> None:
        mode, reason = self._step_mode(action.code)
        self.mode.send(
            ProposeStep(
                run_id=self.run_id,
                step=action.step,
                code=action.code,
                reply=self._reply,
                after_cell_id=self.last_cell,
                mode=mode,
                reason=reason,
                can_regenerate=self.run.can_regenerate,
            )
        )

    def _do_hold(self, wait: Wait) -> None:
        self.held = wait
        self.mode.send(self._state())

    def _do_release(self, _: Any) -> None:
        held, self.held = self.held, None
        assert held is not None
        self.mode.send(self._state())
        self._next(held)

    def _do_bind(self, cell_id: str) -> None:
        self.pending_cell = self.last_cell = cell_id  # what the run adds next goes below it

    def _do_feed_step(self, ran: tuple[str, str, ExecResult, Any, bool]) -> None:
        cell_id, code, result, outcome, interrupted = ran
        step = self.pending
        assert step is not None
        self.pending, self.pending_cell, self.last_cell = None, None, cell_id
        with self._lock:
            self.state.executing = None
        self._show_status()
        self.mode.send(
            StepExecuted(
                run_id=self.run_id,
                step=step.step,
                cell_id=cell_id,
                edited=code.strip() != step.code.strip(),
                error=result.error is not None,
            )
        )
        wait = self.loop.send(Ran(code, outcome))
        # An interrupted step is recorded with its output, then the run stops where it was.
        self._next(self.loop.throw(RunCancelled.interrupted()) if interrupted else wait)

    def _do_record(self, ran: tuple[str | None, str, ExecResult, Any]) -> None:
        cell_id, code, result, outcome = ran
        renumbered = self.loop.human_step(code, result.text(), result.error, result.elapsed_s)
        self.last_cell = cell_id or self.last_cell  # an answer it sets goes right after it
        if renumbered is not None and self.pending is not None:
            # The waiting step now runs after the human's cell: the front end learns its new number
            # (after the events that gave the human's cell the old one) and moves its cell below,
            # also when the human's cell ends the run, so that no two cells show one number.
            self.pending = renumbered
            self._flush()
            self._propose(renumbered)
        if outcome.answer_ready:
            self.on(Input.END, self.loop.human_answer(outcome.answer))
        elif renumbered is not None:
            self._show_status()

    def _do_regenerate(self, _: Any) -> None:
        self.pending, self.pending_cell = None, None
        self._next(self.loop.send(Regenerate()))
        self.mode.send(self._state())

    def _do_refuse(self, _: Any) -> None:
        self.mode.send(self._state())

    def _do_cancel(self, _: Any) -> None:
        with self._lock:
            self.state.stopping = True
        self.parts.tree.cancel()
        self._root_future = None
        self._next(self.loop.throw(RunCancelled()))

    def _do_interrupt(self, _: Any) -> None:
        self._root_future = None
        self._next(self.loop.throw(RunCancelled.interrupted()))

    def _do_hint(self, text: str) -> None:
        self.parts.hint(text)

    def _do_resend(self, _: Any) -> None:
        """Tell a view that just became the owner what the run is and where it stands, and
        propose again the step that waits (the view finds its cell, if any, by its metadata)."""
        self.mode.send(self._started())
        self.mode.send(self._state())
        if self.pending is not None:
            self._propose(self.pending)

    def _do_state(self, _: Any) -> None:
        self.mode.send(self._state())

    # -- what the front end is told ----------------------------------------------------------------
    @property
    def _reply(self) -> str:
        """The root's reply that proposed the pending step."""
        return next((m["content"] for m in reversed(self.run.messages) if m["role"] == "assistant"), "")

    def _step_mode(self, code: str) -> tuple[str, str]:
        """This step's rung: "auto" runs it, "step" waits for the human, and why."""
        if self.step_mode == "confirm-risky":
            reason = risk_of(code)
            return ("step", reason) if reason else ("auto", "")
        return self.step_mode, ""

    def _started(self) -> RunStartedMsg:
        return RunStartedMsg(
            run_id=self.run_id,
            cell_id=self.origin_cell,
            mode=self.step_mode,
            question=self.job.question,
            model=self.run.model,
        )

    def _state(self) -> RunStateMsg:
        self._show_status()
        waiting = self.pending.step if self.pending else None
        return RunStateMsg(
            run_id=self.run_id,
            mode=self.step_mode,
            paused=self.phase in PAUSED,
            waiting_for=waiting,
            can_regenerate=waiting is not None and self.run.can_regenerate,
        )

    def _show_status(self) -> None:
        """The %%rlm cell's view says where the run stands: not "running" while the human is asked."""
        with self._lock:
            held = self.pending is not None and self._step_mode(self.pending.code)[0] == "step"
            waiting = self.pending.step if self.pending and held else None
            self.state.waiting_for, self.state.paused = waiting, self.phase in PAUSED
        self._throttle.poke()

    def _saved(self) -> dict[str, Any]:
        """The final view's metadata: the trajectory, and the mode the run ended in, which the
        extension shows for the run when the notebook is reopened."""
        metadata = notebook_metadata(self.result.trajectory)
        metadata[NOTEBOOK_KEY]["mode"] = self.step_mode
        return metadata

    def _do_finish(self, finish: Finish) -> None:
        """Release the run; its view in the ``%%rlm`` cell ends with the answer or the reason it stopped,
        and keeps the trajectory in its metadata."""
        from IPython.display import HTML

        self.result = self.open.close(finish)
        self.mode.shell.user_ns[self.job.out] = self.result
        self._throttle.close()
        self._flush()
        with self._lock:
            self._display.update(HTML(render_run(self.state, compact=True)), metadata=self._saved())
        self.mode.send(
            RunFinished(
                run_id=self.run_id,
                answer=finish.response,
                answer_markdown=None if finish.response is None else safe.markdown_source(finish.response),
                error=finish.error,
                stop=finish.stop,  # type: ignore[arg-type]
                after_cell_id=self.last_cell,
                usage=str(self.result.usage),
            )
        )
        self.mode.ended(self)
