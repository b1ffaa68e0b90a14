"""``%rlm`` and ``%%rlm``: run an RLM over any variable of the notebook, in the notebook's namespace.

A ``%%rlm`` cell (and a ``%rlm`` statement) is rewritten by an input transformer
(:mod:`.transform`) into an awaited call, so the kernel runs it as an async cell: its event loop
stays free while the run waits on LMs, and the Stop and Run-step buttons are heard at once. Called
any other way, the magics run the same RLM with the blocking driver (interrupt the kernel to stop).

The parts: the words of a line (:mod:`.arguments`), the settings and ``%rlm config``
(:mod:`.settings`), sessions and rewinds (:mod:`.continuation`), the run in its cell
(:mod:`.incell`), the runs panel told of it (:mod:`.announce`).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool, Enum

from .. import models
from ..config import RUN_SETTINGS, RLMConfig
from ..errors import MissingAPIKey, RLMError
from ..executors.settings import takes
from ..lm import no_key_notice
from ..risk import LADDER
from ..rlm import RLM, RLMResult
from ..session import Session
from .active import ActiveRun
from .announce import Announce
from .arguments import SUBCOMMANDS as SUBCOMMANDS
from .arguments import fill_placeholders, magic_parser, parse_cell, parse_line, subcommand
from .arguments import split_line as split_line
from .continuation import end_session, find_branch, session_for
from .incell import InCell, Job, cell_view, close_view, show_result
from .settings import NO_KEY, Setting, config_table, effective_settings, settings_traits
from .transform import await_rlm_magics
from .wake import SignalWake

__all__ = ["NO_KEY", "RLMMagics", "Setting", "await_rlm_magics", "fill_placeholders"]

_parser = magic_parser  # the name the options' parser had here first


@magics_class
class RLMMagics(Magics):
    """Defaults for ``%rlm``; set them with ``%config RLMMagics.<name> = ...`` or ``ipython_config.py``."""

    locals().update(settings_traits())  # RLMConfig's run settings: --max-iterations is max_iterations
    mode = Enum(
        list(LADDER),
        "auto",
        help="auto runs each step; confirm-risky waits for the steps a scan flags; step waits for each",
    ).tag(config=True)
    mode_cap = Enum(
        list(LADDER),
        "auto",
        help="The most autonomous mode any run may have; an administrator sets it in a system-wide "
        "ipython_config.py (confirm-risky: no step the scan flags runs unseen)",
    ).tag(config=True)
    answer = Enum(
        ["markdown", "text"],
        "markdown",
        help="Show the answer as Markdown (made safe: no raw HTML, no remote images) or as plain text",
    ).tag(config=True)
    widget = Bool(True, help="Show the live widget (else plain text progress)").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.runs = ActiveRun()  # the kernel's one run in progress; the RLM Python kernel gives its own
        self.notebook: Any = None  # NotebookMode, set by the RLM Python kernel
        self._told_fallback = False
        self.sessions: dict[str, Session] = {}  # --session NAME

    # -- settings ------------------------------------------------------------------------------
    def settings(self, opts: argparse.Namespace | None = None) -> list[Setting]:
        """Each setting's effective value and where it came from; environment read now."""
        namespace = self.shell.user_ns if self.shell is not None else {}
        return effective_settings(self, opts, namespace)

    def make_rlm(self, opts: argparse.Namespace | None = None) -> tuple[RLM, dict[str, Any]]:
        found = self.settings(opts)
        s = {x.name: x.value for x in found}
        run = {name: None if s[name] == "" else s[name] for name in RUN_SETTINGS}
        if run["executor"] == "local":  # %config's executor settings wait for a kernel run; an option errs
            run["executor_kwargs"] = {
                x.name: x.value for x in found if x.name in takes("kernel") and x.source == "magic option"
            }
        else:  # the executor's settings given one by one, over those of executor_kwargs
            taken = takes(run["executor"])
            chosen = {x.name: x.value for x in found if x.name in taken and x.source != "default"}
            run["executor_kwargs"] = {**run["executor_kwargs"], **chosen}
        try:
            rlm = RLM.from_config(RLMConfig(**run))
        except MissingAPIKey as exc:  # no key yet: the bundled model needs none
            raise UsageError(
                f"{exc} Or use the bundled local model, no key needed: --backend local "
                "(or %config RLMMagics.backend = 'local')."
            ) from None
        except RLMError as exc:
            raise UsageError(str(exc)) from None
        if any(x.name == "backend" and x.source == NO_KEY for x in found):
            print(no_key_notice(run["model_name"]), flush=True)  # sent before a first fetch's own lines
        return rlm, s

    # -- the magics --------------------------------------------------------------------------------
    @line_cell_magic
    def rlm(self, line: str, cell: str | None = None) -> RLMResult | None:
        """%rlm VAR question | %rlm config | %rlm hint TEXT | %rlm stop | %%rlm -c VAR [options]."""
        job = self._parse(line, cell)
        if not isinstance(job, Job) or self._in_cells(job, cell):
            return None
        return self._finish(job, self._run_blocking(job))

    async def arun_result(self, line: str, cell: str | None = None) -> RLMResult | None:
        """What a transformed ``x = %rlm ...`` awaits: the same run on the async driver."""
        job = self._parse(line, cell)
        if not isinstance(job, Job) or self._in_cells(job, cell):
            return None
        return self._finish(job, await self._run_async(job))

    async def arun(self, line: str, cell: str | None = None) -> None:
        """What a transformed ``%%rlm`` cell or ``%rlm`` statement awaits (the result is in ``--out``)."""
        await self.arun_result(line, cell)

    def _namespace(self, job: Job) -> dict[str, Any] | None:
        """The notebook's namespace for the local executor; the others keep theirs in their kernel."""
        return self.shell.user_ns if job.rlm.config.executor == "local" else None

    def _in_cells(self, job: Job, cell: str | None) -> bool:
        """In the RLM Python kernel with the JupyterLab extension, a %%rlm run's steps become cells."""
        if cell is None or self.notebook is None:
            return False
        cell_id = ((self.shell.kernel.get_parent() or {}).get("metadata") or {}).get("cellId")
        # A request from no notebook cell (the chat's persona, a console) is told no cell's story.
        if job.session is not None:
            if cell_id is not None:
                print("Steps of a session's question are shown in this cell.")
            return False
        if job.rlm.config.executor != "local":
            if cell_id is not None:
                print(
                    f"Steps run in the {job.rlm.config.executor} executor's kernel, "
                    "so they are shown in this cell."
                )
            return False
        if not self.notebook.connected:
            self._tell_fallback()
            return False
        self.notebook.start(job, cell_id)
        return True

    def _tell_fallback(self) -> None:
        """Why a run's steps are shown in its cell though notebook mode could make them cells."""
        if self.notebook.refused is not None:  # every time: the user has something to fix
            print(f"Steps are shown in this cell: {self.notebook.refused}")
        elif not self._told_fallback:
            print(
                "Steps are shown in this cell. To get each step as a notebook cell, open the notebook "
                "in JupyterLab with the rlm_kernel extension (pip install rlm-kernel)."
            )
            self._told_fallback = True

    def _parse(self, line: str, cell: str | None) -> Job | None:
        """The job a line or cell asks for, or None for a subcommand (run here)."""
        if cell is None and (command := subcommand(line)) is not None:
            self._subcommand(*command)
            return None
        opts, question = parse_line(line) if cell is None else parse_cell(line, cell)
        return self._job(opts, question)

    def _job(self, opts: argparse.Namespace, question: str) -> Job:
        """A parsed line checked against the notebook: its variable, its settings, the bundled
        model fetched, the recorded run it continues."""
        if not opts.context:
            raise UsageError("%%rlm needs the variable holding the context: %%rlm VAR, or %%rlm -c VAR")
        ns = self.shell.user_ns
        if opts.context not in ns:
            raise UsageError(f"No variable named {opts.context!r} in the namespace: define it, or check -c.")
        question = fill_placeholders(question.strip(), ns)
        rlm, settings = self.make_rlm(opts)
        try:  # a first fetch now, before the run's widget: its room on disk first, then a bar with its size
            for model in models.bundled_models(rlm.config):
                models.fetch(model)
        except RLMError as exc:
            raise UsageError(str(exc)) from None
        if opts.session and opts.continue_from:
            raise UsageError("--session and --continue-from: a rewind starts a run of its own; give one.")
        branch = find_branch(opts.continue_from, rlm, ns) if opts.continue_from else None
        return Job(rlm, settings, ns[opts.context], question or None, opts.out, branch, opts.session)

    def _session(self, job: Job) -> Session:
        """The session ``--session`` names: started by its first cell, whose settings it keeps."""
        assert job.session is not None
        return session_for(self.sessions, job.session, job.rlm, job.context, self._namespace(job))

    def _subcommand(self, command: str, arg: str) -> None:
        if command == "config":
            print(config_table(self.settings()))
        elif command == "end":
            print(end_session(self.sessions, arg.strip()))
        elif self.runs.run is None:
            print(f"%rlm {command}: no run is active.")
        elif command == "hint":
            if not arg.strip():
                raise UsageError("%rlm hint needs text: %rlm hint look at chapter 3")
            self.runs.hint(arg.strip())
            print("Hint noted for the root's next turn.")
        else:
            self._stop()
            print("Stopped the active run.")

    def _stop(self) -> None:
        """The one stop path: ``%rlm stop``, the widget's Stop button, the panel's (notebook mode)."""
        self.runs.stop()

    # -- running ---------------------------------------------------------------------------------------
    def _announce(self, job: Job) -> Announce | None:
        """A run shown in its cell (any run on a stock kernel; a session's question or another
        executor's run on the RLM Python kernel) is told as it goes to every front end: the lab
        extension's runs panel, the chat's persona."""
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None:
            return None
        parent = kernel.get_parent() if hasattr(kernel, "get_parent") else {}
        cell_id = (parent or {}).get("metadata", {}).get("cellId")
        return Announce(mode=job.settings["mode"], cell_id=cell_id if isinstance(cell_id, str) else None)

    @contextlib.contextmanager
    def _shown(self, job: Job) -> Iterator[tuple[InCell, Any, tuple[Any, ...]]]:
        """The job's run claimed as the kernel's one, and shown in its cell (and the runs panel)
        while it runs: the run, its view and the subscribers the view is among."""
        run = InCell(job.rlm)
        self.runs.claim(run)
        view = announce = None
        try:
            widget = job.settings["widget"] and getattr(self.shell, "kernel", None) is not None
            view = cell_view(widget, self._stop)
            announce = self._announce(job)
            yield run, view, (view,) if announce is None else (view, announce)
        finally:
            self.runs.release(run)
            close_view(view, job.settings["mode"])
            if announce is not None:
                announce.close()

    def _run_blocking(self, job: Job) -> RLMResult:
        with self._shown(job) as (_run, _view, subscribers):
            if job.session is not None:
                return self._session(job).ask(job.question, context=job.context, subscribers=subscribers)
            return job.rlm.completion(
                job.context,
                job.question,
                namespace=self._namespace(job),
                subscribers=subscribers,
                branch=job.branch,
            )

    async def _run_async(self, job: Job) -> RLMResult:
        with self._shown(job) as (run, view, subscribers):
            ticker = SignalWake()
            try:
                if job.settings["mode"] != "auto":
                    run.approval = self._approval(job, view)
                if job.session is not None:
                    return await self._session(job).aask(
                        job.question, context=job.context, subscribers=subscribers, approve=run.approval
                    )
                return await job.rlm.acompletion(
                    job.context,
                    job.question,
                    namespace=self._namespace(job),
                    subscribers=subscribers,
                    approve=run.approval,
                    branch=job.branch,
                )
            finally:
                ticker.cancel()

    @staticmethod
    def _approval(job: Job, view: Any) -> Any:
        """Step and confirm-risky mode: the widget's editor, where each step waits for the human."""
        from .display import StepApproval, WidgetView

        if not isinstance(view, WidgetView):
            raise UsageError(
                f"--mode {job.settings['mode']} needs the notebook widget to wait for you; "
                "run it in a notebook, or use --mode auto."
            )
        return StepApproval(view, only_risky=job.settings["mode"] == "confirm-risky")

    def _finish(self, job: Job, result: RLMResult) -> RLMResult:
        self.shell.user_ns[job.out] = result
        show_result(result, job.out, job.settings["answer"])
        return result
