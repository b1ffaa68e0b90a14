"""The RLM persona: ``@RLM question @variable`` in a chat attached to a notebook runs ``%%rlm``
over that variable in the notebook's kernel, and the chat message shows the run as it goes.

Which notebook: one the message attaches, else the notebook beside the chat with the same name
(``report.ipynb`` for ``report.chat``), else the only notebook with a running kernel. The run is
the notebook's own: the same magic, settings (``%config RLMMagics``, ``RLM_*``) and trajectory on
disk as a ``%%rlm`` cell. Each chat is one ``--session``: a follow-up goes on in the same REPL
and conversation, over the variables last named. Stop interrupts the kernel.

Where the server holds the notebook live (jupyter-collaboration, RTC on) and it is open, the run
is also shown in a new cell of the notebook, its live widget there (``live_cell.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_ai_persona_manager import BasePersona, PersonaDefaults
from jupyter_ai_persona_manager.awareness_models import SettingConfiguration, SettingOption, Usage
from jupyterlab_chat.models import Message, NewMessage

from ..config import RLMConfig
from ..foreign import attempt, settled
from ..usage import Tally
from .kernel import NotebookKernel
from .live_cell import LiveCell, live_notebook
from .request import SETTINGS, ChatRequest, cell, missing_line, parse, setup_code
from .transcript import Transcript, one_line

__all__ = ["AVATAR", "RLMPersona", "find_notebook_kernel"]

AVATAR = str(Path(__file__).with_name("avatar.svg"))
_EVERY = 0.25  # seconds between updates of the streamed message
NEW_SETTINGS = "New settings: this question starts a new session (its REPL and conversation start over)."
_HOW = "Name a variable of the notebook: `@RLM which suppliers missed a deadline? @report`"


class RLMPersona(BasePersona):
    """Runs a Recursive Language Model over notebook variables, in the notebook's kernel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.variables: tuple[str, ...] = ()  # the last ones named: a follow-up's context
        self.running: NotebookKernel | None = None
        self._where = ""  # the persona's line under the head: where the run is shown, new settings
        self.spent = Tally()  # the chat's runs, all of them
        self._session: str | None = None  # the session of the last question

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="RLM",
            description="A Recursive Language Model over your notebook's variables: the model "
            "writes code that reads them in the kernel. @RLM question @variable",
            avatar_path=AVATAR,
            system_prompt="The RLM persona runs %%rlm in the notebook's kernel; it has no prompt here.",
        )

    # -- settings and usage, in Jupyter AI's persona controls ---------------------------------------
    async def prepare(self) -> None:
        """Offer the run's settings that fit a chat (:data:`~.request.SETTINGS`), each unset: the
        notebook's own, until chosen in the chat."""
        chosen = self.options()  # kept where the persona is prepared again
        self.report_settings_configuration(
            [_setting(key, values, chosen.get(key)) for key, values in SETTINGS.items()]
        )

    def options(self) -> dict[str, str]:
        """The settings chosen in the chat (Jupyter AI records them), as the cell's options; a value
        not offered is left out."""
        chosen = self.get_settings()
        return {key: value for key, value in chosen.items() if value in SETTINGS.get(key, {})}

    # -- hooks a test or another server may replace ------------------------------------------------
    async def notebook_kernel(self, message: Message) -> NotebookKernel | str:
        """The kernel of this chat's notebook, or a one-line reason there is none."""
        serverapp = self.parent.parent.serverapp
        attached = [str(getattr(a, "value", "")) for a in (self.chat.get_attachments() or {}).values()]
        return await find_notebook_kernel(serverapp, self.get_chat_path(relative=True), attached)

    async def live_notebook(self, path: str) -> Any | None:
        """The notebook at ``path`` as the server holds it live (a ``YNotebook``), or None."""
        return await live_notebook(self.parent.parent.serverapp, path)

    def session_name(self) -> str:
        """This chat's ``--session``: one REPL and conversation per chat and settings (a session
        keeps the settings of its first question, so settings chosen later start another)."""
        try:
            path = self.get_chat_path()
        except AttributeError:  # a chat with no manager (a test's): one session per persona
            path = str(id(self))
        key = path + json.dumps(self.options(), sort_keys=True)
        return "chat_" + hashlib.sha256(key.encode()).hexdigest()[:10]

    # -- the persona's API ------------------------------------------------------------------------
    async def process_message(self, message: Message) -> None:
        users = {u.mention_name for u in self.chat.get_users().values()} | {self.name}
        request = parse(message.body, users)
        if not request.variables and self.variables:
            request = ChatRequest(request.question, self.variables)
        if not request.variables or not request.question:
            self.send_message(_HOW)
            return
        kernel = await self.notebook_kernel(message)
        if isinstance(kernel, str):
            self.send_message(kernel)
            return
        try:
            await self._ask(kernel, request)
        finally:
            kernel.close()

    async def _ask(self, kernel: NotebookKernel, request: ChatRequest) -> None:
        """The variables checked in the kernel, then the run; a missing name is one line."""
        await kernel.ready()
        names = await kernel.names()
        missing = [v for v in request.variables if v not in names]
        if missing:
            self.send_message(missing_line(missing, names))
            return
        self.variables = request.variables
        if (code := setup_code(request.variables)) is not None:
            await kernel.bind(code)
        await self._run(kernel, request)

    async def cancel_response(self) -> None:
        if self.running is not None:
            await self.running.interrupt()

    async def _run(self, kernel: NotebookKernel, request: ChatRequest) -> None:
        """The cell run in the kernel, its messages folded into one chat message updated in place,
        and its outputs put into a new cell of the live notebook where there is one."""
        session = self.session_name()
        code = cell(request, session=session, options=self.options())
        live = await self._live_cell(kernel, code)
        transcript = Transcript(variables=request.variables)
        self._where = " ".join(
            line
            for line in (
                _shown_in(kernel) if live is not None else "",
                NEW_SETTINGS if self._session not in (None, session) else "",
            )
            if line
        )
        self._session = session
        msg_id = self.chat.add_message(NewMessage(body=self._body(transcript), sender=self.id))
        shown, last = self._body(transcript), 0.0
        self.running = kernel
        self.set_status("is running the RLM...")
        try:
            async for msg in kernel.run(code):
                if live is not None:
                    live.feed(msg)
                if transcript.feed(msg) and time.monotonic() - last >= _EVERY:
                    shown, last = self._show(msg_id, transcript, shown), time.monotonic()
        finally:
            self.running = None
            if live is not None:
                live.finish()
            self.clear_status()
            self._show(msg_id, transcript, shown)
            self._report(transcript)

    async def _live_cell(self, kernel: NotebookKernel, code: str) -> LiveCell | None:
        """A new cell for the run in the live notebook; None where the server holds none."""
        path = kernel.path
        if not path:
            return None
        notebook, error = await settled(self.live_notebook(path))
        cell = None
        if notebook is not None:
            cell, error = attempt(lambda: LiveCell.insert(notebook, code))
        if error is not None:  # no cell is no reason to fail the chat
            self.log.warning("No cell for the run in %s", path, exc_info=error)
        return cell

    def _report(self, transcript: Transcript) -> None:
        """The run's LM calls added to the chat's usage, which Jupyter AI shows as the persona's
        (totals, as the ACP personas report theirs; a cost only while every call's is known)."""
        run = transcript.usage.total
        if run.calls == 0:
            return
        self.spent.add(run.input_tokens, run.output_tokens, run.cached_tokens, run.cost)
        total = self.spent
        cost = {} if total.cost is None else {"cost_amount": total.cost, "cost_currency": "USD"}
        tokens = {"input_tokens": total.input_tokens, "output_tokens": total.output_tokens}
        usage = Usage(**tokens, total_tokens=total.tokens, cached_read_tokens=total.cached_tokens, **cost)
        self.report_usage(usage)

    def _body(self, transcript: Transcript) -> str:
        """The chat's text: the transcript, with the line that says where the run is shown."""
        body = transcript.markdown()
        if not self._where:
            return body
        head, _, rest = body.partition("\n\n")
        return "\n\n".join(part for part in (head, self._where, rest) if part)

    def _show(self, msg_id: str, transcript: Transcript, shown: str) -> str:
        body = self._body(transcript)
        if body != shown:
            update = Message(id=msg_id, body=body, time=time.time(), sender=self.id, raw_time=False)
            self.chat.update_message(update, append=False)
        return body


async def find_notebook_kernel(serverapp: Any, chat_path: str, attached: list[str]) -> NotebookKernel | str:
    """The kernel of the notebook a chat is about, from the server's sessions; else why not."""
    sessions = [s for s in await serverapp.session_manager.list_sessions() if s.get("kernel")]
    notebooks = {str(s.get("path") or ""): s["kernel"]["id"] for s in sessions}
    notebooks = {p: k for p, k in notebooks.items() if p.endswith(".ipynb")}
    beside = str(PurePosixPath(chat_path).with_suffix(".ipynb"))
    wanted = [p for p in attached if p.endswith(".ipynb")] + [beside]
    chosen = next((p for p in wanted if p in notebooks), None)
    if chosen is None and len(notebooks) == 1:
        chosen = next(iter(notebooks))
    if chosen is None:
        if not notebooks:
            return "No notebook has a running kernel: open the notebook and run a cell, then ask again."
        return f"Several notebooks are open: attach the one to use, or name this chat after it ({beside})."
    kernel_id = notebooks[chosen]
    manager = serverapp.kernel_manager
    client = manager.get_kernel(kernel_id).client()
    return NotebookKernel(client, lambda: _maybe_await(manager.interrupt_kernel(kernel_id)), path=chosen)


def _shown_in(kernel: NotebookKernel) -> str:
    """The chat's line that says where the run is shown live."""
    name = PurePosixPath(kernel.path or "").name
    return f"The run is shown live in a new cell at the end of {one_line(name)}."


async def _maybe_await(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) or asyncio.isfuture(value) else value


def _setting(key: str, values: dict[str, str], current: str | None) -> SettingConfiguration:
    """One of the run's settings as Jupyter AI's controls show it: its help, its offered values."""
    help_text = RLMConfig.__dataclass_fields__[key].metadata.get("help")
    options = [SettingOption(id=value, name=label) for value, label in values.items()]
    name = key.replace("_", " ")
    return SettingConfiguration(id=key, current=current, name=name, description=help_text, options=options)
