"""``%rlm`` and ``%%rlm``: run an RLM over any variable of the notebook, in the notebook's namespace.

A ``%%rlm`` cell (and a ``%rlm`` statement) is rewritten by an input transformer into an awaited
call, so the kernel runs it as an async cell: its event loop stays free while the run waits on
LMs, and the Stop and Run-step buttons are heard at once. Called any other way, the magics run
the same RLM with the blocking driver (interrupt the kernel to stop).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import difflib
import os
import re
import shlex
import signal
import socket
import sys
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool, Dict, Enum, Float, Int, List, TraitType, Unicode

from .. import models
from ..config import (
    ALIASES,
    RUN_SETTINGS,
    DeprecatedName,
    RLMConfig,
    add_arguments,
    setting_choices,
    setting_env,
    setting_help,
    setting_kind,
    setting_type,
)
from ..errors import MissingAPIKey, RLMError
from ..events import Event, RootToken, RunEnded, RunStarted
from ..lm import backend as backend_of
from ..lm import keyed_backend, no_key_notice
from ..messages import COMM_TARGET, EventsMsg, Message, RunFinished, RunStartedMsg
from ..rewind import Branch, branch_at
from ..risk import LADDER, capped
from ..rlm import RLM, RLMResult
from ..session import Session
from ..tools import MCPServer
from ..trajectory import NOTEBOOK_KEY, default_log_dir, load, notebook_metadata
from . import safe
from .active import ActiveRun
from .throttle import Throttle

__all__ = ["RLMMagics", "await_rlm_magics"]

SUBCOMMANDS = ("config", "hint", "stop", "end")
NO_KEY = "no API key found: the bundled model"
_FIELDS = {f.name: f for f in dataclasses.fields(RLMConfig)}


def _trait(name: str) -> TraitType:
    """The %config trait of run setting ``name``, from its type and metadata in RLMConfig."""
    default = _FIELDS[name].default
    help = setting_help(name)
    if env := setting_env(name):
        help += f" (env {env})"
    if setting_kind(name) in ("dict", "functions"):
        default = _FIELDS[name].default_factory() if default is dataclasses.MISSING else default
        trait: TraitType = Dict(help=help) if isinstance(default, dict) else List(help=help)
        return trait.tag(config=True)
    optional = default is None
    if choices := setting_choices(name):
        return Enum(list(choices), default, allow_none=optional, help=help).tag(config=True)
    kind = setting_type(name)
    if kind is bool:
        return Bool(default, allow_none=optional, help=help).tag(config=True)
    trait_type = {int: Int, float: Float}.get(kind, Unicode)
    return trait_type(default, allow_none=optional, help=help).tag(config=True)


def _settings_traits() -> dict[str, TraitType]:
    """RLMConfig's run settings as traits, and each older spelling as a trait of its own (read with
    a warning)."""
    traits = {name: _trait(name) for name in RUN_SETTINGS}
    traits.update({old: _trait(new) for old, new in ALIASES.items()})
    return traits


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line for the user, not a usage dump and SystemExit
        raise UsageError(f"%rlm: {message}{self._did_you_mean(message)} (%rlm? lists the options)")

    def _did_you_mean(self, message: str) -> str:
        """For an option argparse does not know, the known one closest to it: "; did you mean --x?"."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        known = list(self._option_string_actions)
        guesses = []
        for word in message.removeprefix("unrecognized arguments: ").split():
            if word.startswith("-"):
                guesses += difflib.get_close_matches(word.partition("=")[0], known, n=1, cutoff=0.6)
        return f"; did you mean {' or '.join(dict.fromkeys(guesses))}?" if guesses else ""


def _parser() -> _Parser:
    p = _Parser(prog="%rlm", add_help=False)
    p.add_argument("-c", "--context", help="the variable that holds the context")
    p.add_argument("-o", "--out", default="_rlm", help="where the RLMResult goes")
    p.add_argument("--mode", choices=list(LADDER))
    p.add_argument("--answer", choices=["markdown", "text"], help="how the answer is shown")
    p.add_argument("--no-widget", action="store_true")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="ask in the session NAME: one REPL and one conversation with its earlier questions "
        "(%%rlm end NAME ends it)",
    )
    add_arguments(p, functions="NAME,...")  # RLMConfig's run settings, one flag each
    p.add_argument(
        "--continue-from",
        metavar="RUN:STEP",
        help="rewind: continue a recorded run from one of its root steps; RUN is the variable holding "
        "its result, its run id, or its trajectory file",
    )
    return p


_TAKES_VALUE = {
    a
    for action in _parser()._actions
    if action.nargs is None and action.const is None
    for a in action.option_strings
}


def split_line(line: str) -> tuple[list[str], str]:
    """Leading options of a ``%rlm`` line, and the rest as written (a question may hold quotes)."""
    options: list[str] = []
    rest = line.strip()
    while rest.startswith("-"):
        token, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        options.append(token)
        if token in _TAKES_VALUE and "=" not in token:
            value, _, rest = rest.partition(" ")
            options.append(value)
            rest = rest.lstrip()
    return options, rest


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_placeholders(question: str, namespace: Mapping[str, Any]) -> str:
    """``{name}`` in a question becomes the variable's value; ``{{`` and ``}}`` are braces. Other
    braces (``{"a": 1}``, ``{x + 1}``) stay as they are."""

    def value(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name = m.group(1)
        if name not in namespace:
            raise UsageError(
                f"No variable named {name!r} for {{{name}}} in the question: define it, "
                f"or write {{{{{name}}}}} for the braces themselves."
            )
        return str(namespace[name])

    return _PLACEHOLDER.sub(value, question)


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: str


@magics_class
class RLMMagics(Magics):
    """Defaults for ``%rlm``; set them with ``%config RLMMagics.<name> = ...`` or ``ipython_config.py``."""

    locals().update(_settings_traits())  # RLMConfig's run settings: --max-iterations is max_iterations
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
    def _explicit(self, name: str) -> bool:
        section = self.config.get("RLMMagics") if "RLMMagics" in self.config else None
        return section is not None and name in section

    def settings(self, opts: argparse.Namespace | None = None) -> list[Setting]:
        """Each setting's effective value and where it came from; environment read now."""
        out = []
        for name in (*RUN_SETTINGS, "mode", "answer", "widget"):
            option = getattr(opts, name, None) if opts is not None else None
            if name == "widget" and opts is not None and opts.no_widget:
                option = False
            old = next((o for o, new in ALIASES.items() if new == name and self._explicit(o)), None)
            env = setting_env(name) if name in RUN_SETTINGS else None
            if option is not None and name in RUN_SETTINGS and setting_kind(name) == "functions":
                out.append(Setting(name, self._functions(option, name), "magic option"))
            elif option is not None and name == "output_type":  # a class or schema of the notebook's
                found = self.shell.user_ns.get(option)
                value = found if isinstance(found, (type, dict)) else option
                out.append(Setting(name, value, "magic option"))
            elif option is not None:
                out.append(Setting(name, option, "magic option"))
            elif self._explicit(name):
                out.append(Setting(name, getattr(self, name), "%config / ipython_config"))
            elif old is not None:
                warnings.warn(
                    f"RLMMagics.{old} is now called RLMMagics.{name}; the old name will go.",
                    DeprecatedName,
                    stacklevel=2,
                )
                out.append(Setting(name, getattr(self, old), f"%config RLMMagics.{old}"))
            elif env and os.environ.get(env):
                out.append(Setting(name, os.environ[env], f"${env}"))
            elif name == "backend":
                out.append(self._found_backend())
            else:
                out.append(Setting(name, getattr(self, name), "default"))
            if name == "mode" and capped(str(out[-1].value), self.mode_cap) != out[-1].value:
                out[-1] = Setting(
                    name, self.mode_cap, f"capped by RLMMagics.mode_cap ({out[-1].value} asked)"
                )
        return out

    def _found_backend(self) -> Setting:
        """With no backend configured: the provider whose key is found (OpenAI's first), else the
        bundled model, which needs none. Services with no default model are only chosen by name."""
        if (spec := keyed_backend()) is not None:
            return Setting("backend", spec.name, f"${spec.key_var} is set")
        if self.backend_kwargs.get("api_key"):
            return Setting("backend", "openai", "default: backend_kwargs has an api_key")
        return Setting("backend", "local", NO_KEY)

    def _functions(self, names: str, option: str) -> dict[str, Any]:
        """``--tools a,b``: the notebook's functions of those names, and the tools of its MCP servers
        of those names, by the names the servers give them."""
        found: dict[str, Any] = {}
        for name in filter(None, (n.strip() for n in names.split(","))):
            value = self.shell.user_ns.get(name)
            if isinstance(value, MCPServer):
                found.update((tool.name, tool) for tool in value.tools())
            elif callable(value):
                found[name] = value
            else:
                raise UsageError(
                    f"--{option.replace('_', '-')}: no function or MCP server named {name!r} in the namespace"
                )
        return found

    def make_rlm(self, opts: argparse.Namespace | None = None) -> tuple[RLM, dict[str, Any]]:
        found = self.settings(opts)
        s = {x.name: x.value for x in found}
        run = {name: None if s[name] == "" else s[name] for name in RUN_SETTINGS}
        if run["executor"] == "local":
            run["executor_kwargs"] = {}
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
            print(no_key_notice(run["model_name"]))
        return rlm, s

    # -- the magics --------------------------------------------------------------------------------
    @line_cell_magic
    def rlm(self, line: str, cell: str | None = None) -> RLMResult | None:
        """%rlm VAR question | %rlm config | %rlm hint TEXT | %rlm stop | %%rlm -c VAR [options]."""
        job = self._parse(line, cell)
        if not isinstance(job, _Job) or self._in_cells(job, cell):
            return None
        return self._finish(job, self._run_blocking(job))

    async def arun_result(self, line: str, cell: str | None = None) -> RLMResult | None:
        """What a transformed ``x = %rlm ...`` awaits: the same run on the async driver."""
        job = self._parse(line, cell)
        if not isinstance(job, _Job) or self._in_cells(job, cell):
            return None
        return self._finish(job, await self._run_async(job))

    def _namespace(self, job: _Job) -> dict[str, Any] | None:
        """The notebook's namespace for the local executor; the others keep theirs in their kernel."""
        return self.shell.user_ns if job.rlm.config.executor == "local" else None

    def _in_cells(self, job: _Job, cell: str | None) -> bool:
        """In the RLM Python kernel with the JupyterLab extension, a %%rlm run's steps become cells."""
        if cell is None or self.notebook is None:
            return False
        if job.session is not None:
            print("Steps of a session's question are shown in this cell.")
            return False
        if job.rlm.config.executor != "local":
            print(
                f"Steps run in the {job.rlm.config.executor} executor's kernel, "
                "so they are shown in this cell."
            )
            return False
        if not self.notebook.connected:
            if self.notebook.refused is not None:  # every time: the user has something to fix
                print(f"Steps are shown in this cell: {self.notebook.refused}")
            elif not self._told_fallback:
                print(
                    "Steps are shown in this cell. To get each step as a notebook cell, open the notebook "
                    "in JupyterLab with the rlm_kernel extension (pip install rlm-kernel)."
                )
                self._told_fallback = True
            return False
        parent = self.shell.kernel.get_parent() or {}
        self.notebook.start(job, (parent.get("metadata") or {}).get("cellId"))
        return True

    async def arun(self, line: str, cell: str | None = None) -> None:
        """What a transformed ``%%rlm`` cell or ``%rlm`` statement awaits (the result is in ``--out``)."""
        await self.arun_result(line, cell)

    def _parse(self, line: str, cell: str | None) -> _Job | None:
        if cell is None:
            words = line.strip().split(maxsplit=1)
            command = words[0] if words else ""
            if command in SUBCOMMANDS:
                self._subcommand(command, words[1] if len(words) > 1 else "")
                return None
            options, rest = split_line(line)
            opts = _parser().parse_args(options)
            name, _, question = rest.partition(" ")
            if not name:
                raise UsageError("%rlm needs a variable and a question: %rlm VAR question")
            opts.context = opts.context or name
        else:
            parser = _parser()
            # `%%rlm VAR`, as `%rlm VAR question`: a bare word names the context's variable.
            parser.add_argument("variable", nargs="?", help=argparse.SUPPRESS)
            opts = parser.parse_args(shlex.split(line))
            if opts.variable is not None:
                if opts.context is not None and opts.context != opts.variable:
                    raise UsageError(
                        f"%%rlm got two contexts, {opts.variable} and -c {opts.context}: give one."
                    )
                opts.context = opts.variable
            question = cell
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
        branch = self._branch(opts.continue_from, rlm) if opts.continue_from else None
        return _Job(rlm, settings, ns[opts.context], question or None, opts.out, branch, opts.session)

    def _session(self, job: _Job) -> Session:
        """The session ``--session`` names: started by its first cell, whose settings it keeps."""
        assert job.session is not None
        session = self.sessions.get(job.session)
        if session is None:
            session = self.sessions[job.session] = job.rlm.session(
                job.context, namespace=self._namespace(job)
            )
        elif session.rlm.config != job.rlm.config:
            raise UsageError(
                f"--session {job.session} keeps the settings of its first cell; to change them, "
                f"%rlm end {job.session} and start it again."
            )
        return session

    def _branch(self, spec: str, rlm: RLM) -> Branch:
        """``RUN:STEP`` of ``--continue-from``: the recorded run, found as the notebook's variable
        holding its result, a trajectory file, or its run id in the log folder."""
        run, _, step = spec.rpartition(":")
        if not run or not step.strip().isdigit():
            raise UsageError(f"--continue-from takes RUN:STEP, as in _rlm:2, not {spec!r}")
        held = self.shell.user_ns.get(run)
        if isinstance(held, RLMResult):
            events, run_id = held.trajectory, held.run_id
        elif Path(run).expanduser().is_file():
            events, run_id = load(Path(run).expanduser()), None
        else:
            folder = Path(rlm.config.log_dir or default_log_dir())
            found = sorted(folder.glob(f"rlm-*-{run}.jsonl")) if run.isalnum() else []
            if not found:
                raise UsageError(
                    f"--continue-from: no run {run!r}: name the variable holding its result, its "
                    f"trajectory file, or a run id whose trajectory is in {folder}"
                )
            events, run_id = load(found[-1]), run
        try:
            return branch_at(events, int(step), run_id)
        except RLMError as exc:
            raise UsageError(f"--continue-from: {exc}") from None

    def _subcommand(self, command: str, arg: str) -> None:
        if command == "config":
            self._print_config()
            return
        if command == "end":
            session = self.sessions.pop(arg.strip(), None)
            if session is None:
                known = ", ".join(self.sessions) or "none"
                raise UsageError(f"%rlm end: no session named {arg.strip()!r} (sessions: {known}).")
            session.close()
            print(f"Session {arg.strip()} ended ({len(session.results)} questions).")
            return
        if self.runs.run is None:
            print(f"%rlm {command}: no run is active.")
        elif command == "hint":
            if not arg.strip():
                raise UsageError("%rlm hint needs text: %rlm hint look at chapter 3")
            self.runs.hint(arg.strip())
            print("Hint noted for the root's next turn.")
        else:
            self._stop()
            print("Stopped the active run.")

    def _print_config(self) -> None:
        found = self.settings()
        rows = [(s.name, repr(s.value), s.source) for s in found]
        backend = next(s.value for s in found if s.name == "backend")
        declared = backend_of(backend)
        for var in filter(None, (declared.key_var, declared.base_url_var)):
            shown = "set" if os.environ.get(var) else "not set"
            if var.endswith("BASE_URL") and os.environ.get(var):
                shown = os.environ[var]
            rows.append((var, shown, "environment"))
        width = max(len(r[0]) for r in rows)
        print("\n".join(f"{n.ljust(width)}  {v}  ({src})" for n, v, src in rows))

    def _stop(self) -> None:
        """The one stop path: ``%rlm stop``, the widget's Stop button, the panel's (notebook mode)."""
        self.runs.stop()

    # -- running ---------------------------------------------------------------------------------------
    def _view(self, job: _Job) -> Any:
        if job.settings["widget"] and getattr(self.shell, "kernel", None) is not None:
            from .display import WidgetView

            view = WidgetView(on_stop=self._stop)
            view.show()
            return view
        from ..console import ConsoleView

        return ConsoleView(sys.stdout, stream_tokens=False)

    def _announce(self, job: _Job) -> _Announce | None:
        """On a kernel without notebook mode (the stock python3 kernel), the lab extension's runs
        panel hears of the run as it goes."""
        kernel = getattr(self.shell, "kernel", None)
        if self.notebook is not None or kernel is None:
            return None
        parent = kernel.get_parent() if hasattr(kernel, "get_parent") else {}
        cell_id = (parent or {}).get("metadata", {}).get("cellId")
        return _Announce(mode=job.settings["mode"], cell_id=cell_id if isinstance(cell_id, str) else None)

    def _run_blocking(self, job: _Job) -> RLMResult:
        run = _InCell(job.rlm)
        self.runs.claim(run)
        view = announce = None
        try:
            view = self._view(job)
            announce = self._announce(job)
            subscribers = (view,) if announce is None else (view, announce)
            if job.session is not None:
                return self._session(job).ask(job.question, context=job.context, subscribers=subscribers)
            return job.rlm.completion(
                job.context,
                job.question,
                namespace=self._namespace(job),
                subscribers=subscribers,
                branch=job.branch,
            )
        finally:
            self.runs.release(run)
            _close(view, job.settings["mode"])
            if announce is not None:
                announce.close()

    async def _run_async(self, job: _Job) -> RLMResult:
        from .display import StepApproval, WidgetView

        run = _InCell(job.rlm)
        self.runs.claim(run)
        view, announce, ticker = None, None, _SignalWake()
        try:
            view = self._view(job)
            announce = self._announce(job)
            subscribers = (view,) if announce is None else (view, announce)
            if job.settings["mode"] != "auto":
                if isinstance(view, WidgetView):
                    run.approval = StepApproval(view, only_risky=job.settings["mode"] == "confirm-risky")
                else:
                    raise UsageError(
                        f"--mode {job.settings['mode']} needs the notebook widget to wait for you; "
                        "run it in a notebook, or use --mode auto."
                    )
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
            self.runs.release(run)
            _close(view, job.settings["mode"])
            if announce is not None:
                announce.close()

    def _finish(self, job: _Job, result: RLMResult) -> RLMResult:
        from IPython.display import display

        self.shell.user_ns[job.out] = result
        if result.restored_names:
            names = ", ".join(f"`{n}`" for n in result.restored_names)
            print(f"Your own {names} put back after the run; its answer is in {job.out}.response.")
        if result.response is not None:
            # LM text never goes out as Markdown or live HTML: a trusted output would run its script.
            text = result.response
            if not isinstance(text, str):  # a typed answer (output_type): its value as Python shows it
                text = repr(text)
            shown = {"text/plain": text}
            if job.settings["answer"] == "markdown" and isinstance(result.response, str):
                shown["text/html"] = safe.markdown_html(text)
            display(shown, raw=True)
        if result.error:
            print(f"RLM: {result.error}", file=sys.stderr)
        return result


@dataclass
class _InCell:
    """A run whose steps are shown in its cell (the widget or plain text)."""

    rlm: RLM
    approval: Any = None  # StepApproval in step mode

    def stop(self) -> None:
        self.rlm.cancel()
        if self.approval is not None:
            self.approval.cancel()

    def hint(self, text: str) -> None:
        self.rlm.hint(text)


@dataclass
class _Job:
    rlm: RLM
    settings: dict[str, Any]
    context: Any
    question: str | None
    out: str
    branch: Branch | None = None  # --continue-from: the recorded run this one continues
    session: str | None = None  # --session: the session's name


class _SignalWake:
    """While a run is awaited, a signal wakes the kernel's event loop. ipykernel turns an interrupt
    of an async cell into a callback on that loop without waking it, so an idle loop would hear it
    late; the signal's byte on a socket the loop reads (``signal.set_wakeup_fd``) wakes it at once."""

    def __init__(self) -> None:
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._old: int | None = None
        try:
            old = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread, where signals arrive: nothing to wake here
            return
        if old != -1:  # the loop already wakes on signals (asyncio's own handlers): leave it so
            signal.set_wakeup_fd(old)
            return
        self._old = old
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._reader.fileno(), self._drain)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            while self._reader.recv(4096):
                pass

    def cancel(self) -> None:
        if self._old is not None:
            self._loop.remove_reader(self._reader.fileno())
            signal.set_wakeup_fd(self._old)
            self._old = None
        self._reader.close()
        self._writer.close()


def _close(view: Any, mode: str) -> None:
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


class _Announce:
    """A run of the magics told to the lab extension's runs panel as it goes, on a kernel without
    notebook mode. The comm is notebook mode's (its target and its declared messages,
    ``messages.py``), opened by the kernel this time, and says only ``run_started``, ``events`` and
    ``run_finished``: the run stays in its cell. A front end with no such target closes the comm,
    and the run goes on as before.

    A subscriber: events come from any thread; they are sent at most five times a second."""

    def __init__(self, *, mode: str, cell_id: str | None) -> None:
        self.mode, self.cell_id = mode, cell_id
        self.comm: Any = None
        self.run_id: str | None = None
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._throttle = Throttle(self._flush, 0.2)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted) and self.run_id is None and event.parent_id is None:
            self._open(event)
        if isinstance(event, RootToken) or self.run_id is None:
            return
        with self._lock:
            self._events.append(event.to_dict())
        self._throttle.poke()
        if isinstance(event, RunEnded) and event.run_id == self.run_id:
            self._flush()
            self._send(
                RunFinished(
                    run_id=self.run_id,
                    answer=event.response,
                    error=event.error,
                    stop=event.stop,
                )
            )

    def _open(self, event: RunStarted) -> None:
        from comm import create_comm

        self.run_id = event.run_id
        started = RunStartedMsg(
            run_id=event.run_id,
            cell_id=self.cell_id,
            mode=self.mode,  # type: ignore[arg-type]
            question=event.question,
            model=event.model,
        )
        self.comm = create_comm(target_name=COMM_TARGET, data=started.to_dict())

    def _send(self, message: Message) -> None:
        if self.comm is not None:
            self.comm.send(message.to_dict())

    def _flush(self) -> None:
        with self._lock:
            events, self._events = self._events, []
            if events and self.run_id is not None:
                self._send(EventsMsg(run_id=self.run_id, events=events))

    def close(self) -> None:
        self._throttle.close()
        self._flush()
        if self.comm is not None:
            self.comm.close()
            self.comm = None


_LINE_MAGIC = re.compile(r"^(?:(?P<target>[A-Za-z_]\w*)\s*=\s*)?%rlm(?:\s+(?P<rest>.*?))?\s*$")


def await_rlm_magics(lines: list[str]) -> list[str]:
    """Input transformer, run before IPython's own syntax: a ``%%rlm`` cell and each top-level
    ``%rlm`` line become awaited calls (so a question may end with ``?`` without asking for help)."""
    if not lines:
        return lines
    if lines[0].startswith("%%rlm") and (len(lines[0]) == 5 or lines[0][5].isspace()):
        line, body = lines[0][5:].strip(), "".join(lines[1:])
        return [f"await __rlm_magics__.arun({line!r}, {body!r})\n"]
    out = []
    for line in lines:
        m = _LINE_MAGIC.match(line.rstrip("\n"))
        if m is None:
            out.append(line)
            continue
        rest = m.group("rest") or ""
        if m.group("target"):
            out.append(f"{m.group('target')} = await __rlm_magics__.arun_result({rest!r})\n")
        else:
            out.append(f"await __rlm_magics__.arun({rest!r})\n")
    return out
