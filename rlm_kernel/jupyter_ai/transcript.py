"""The kernel's messages about one ``%%rlm`` run, folded into the text of one chat message.

A stock kernel tells a run as it goes over the runs panel's comm (``messages.py``: ``run_started``,
``events``, ``run_finished``) and prints one-line notices (the bundled model, a variable put back)
to the cell's stdout; a mistake is the cell's ``UsageError``. This fold reads those messages, as a
front end does, and writes Markdown for the chat. The RLM Python kernel tells a session's question
the same way (its steps are not cells); the answer the cell shows is the fallback where no comm
told the run.

Everything an LM, the context or the kernel wrote is untrusted here (``jupyter/safe.py``): the
answer is :func:`~rlm_kernel.jupyter.safe.markdown_source` (no raw HTML, no image, no unsafe link),
code and output go in fences longer than any run of backticks they hold, and one-line texts are
escaped to exactly their characters. Known secrets and secrets recognizable by their form are
redacted from every message first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..events import event_from_dict
from ..foreign import attempt
from ..jupyter import safe
from ..messages import COMM_TARGET
from ..secrets import Redactor, secrets_of
from ..usage import Usage, is_lm_call

__all__ = ["StepLine", "Transcript", "fenced", "name", "one_line"]

_PREVIEW = 600  # characters of a step's code or output shown in the chat
_BACKTICKS = re.compile(r"`+")
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_WIDGET = "application/vnd.jupyter.widget-view+json"
_MARKS = {"low_confidence": "low confidence", "unsupported": "unsupported"}


def one_line(value: str, limit: int = 300) -> str:
    """Untrusted text as Markdown that renders as exactly its characters, on one line."""
    flat = " ".join(value.split())
    flat = flat if len(flat) <= limit else flat[:limit] + "…"
    return _PUNCTUATION.sub(r"\\\1", flat)


def name(value: str) -> str:
    """A variable's name as code; a name that is not an identifier as escaped text."""
    return f"`{value}`" if value.isidentifier() else one_line(value)


def fenced(value: str, info: str = "") -> str:
    """Untrusted text as a fenced block no backticks inside it can close."""
    cut = value if len(value) <= _PREVIEW else value[:_PREVIEW] + "\n…"
    longest = max((len(m) for m in _BACKTICKS.findall(cut)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{cut}\n{fence}"


@dataclass
class StepLine:
    """One root step as the chat shows it."""

    step: int
    code: str = ""
    output: str | None = None
    error: str | None = None
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def markdown(self) -> str:
        tokens = f", {self.tokens_in:,} tokens in, {self.tokens_out:,} out" if self.calls else ""
        state = "running" if self.output is None else ("error" if self.error else "done")
        head = f"**Step {self.step}** ({state}; {self.calls} sub-call(s){tokens})"
        parts = [head, fenced(self.code, "python")]
        if self.output:
            parts.append(fenced(self.output))
        return "\n\n".join(parts)


@dataclass
class Transcript:
    """The chat's view of one run, fed the kernel's iopub messages in order."""

    variables: tuple[str, ...] = ()
    notices: list[str] = field(default_factory=list)
    steps: dict[int, StepLine] = field(default_factory=dict)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    model: str = ""
    answer: str | None = None
    error: str | None = None
    stopped: bool = False
    done: bool = False
    run_id: str | None = None
    usage: Usage = field(default_factory=Usage)  # the run's LM calls, children's included
    _comm: str | None = None
    _open_line: bool = False  # the last printed text ended mid-line (a progress bar redraws it)
    _redactor: Redactor = field(default_factory=lambda: Redactor(secrets_of()))

    def feed(self, msg: dict[str, Any]) -> bool:
        """Take one iopub message; whether the chat's text changed."""
        kind, content = msg.get("msg_type"), self._redacted(msg.get("content") or {})
        if kind == "stream" and content.get("name") in ("stdout", "stderr"):
            return self._notice(str(content.get("text", "")))
        if kind == "error":
            self.error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
            return True
        if kind == "display_data" and self.run_id is None:
            return self._shown(content.get("data") or {})
        if kind == "comm_open" and content.get("target_name") == COMM_TARGET:
            return self._open(content)
        if kind == "comm_msg" and content.get("comm_id") == self._comm:
            return self._message(content.get("data") or {})
        return False

    def _notice(self, text: str) -> bool:
        """Printed lines; a progress bar's redrawn line (after a carriage return) replaces its last."""
        if text.startswith("\r") and self._open_line and self.notices:
            self.notices.pop()
        lines = [line.rsplit("\r", 1)[-1] for line in text.splitlines()]
        self.notices += [line for line in lines if line.strip()]
        self._open_line = not text.endswith("\n")
        return True

    def _redacted(self, value: Any) -> Any:
        """The message with no secret in any of its texts, before any text is escaped."""
        if isinstance(value, str):
            return self._redactor.text(value)
        if isinstance(value, dict):
            return {k: self._redacted(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redacted(v) for v in value]
        return value

    def _shown(self, data: dict[str, Any]) -> bool:
        """The answer the cell shows, where no comm told the run (a kernel in notebook mode)."""
        if _WIDGET in data or not isinstance(data.get("text/plain"), str):
            return False
        self.answer = data["text/plain"]
        return True

    def _open(self, content: dict[str, Any]) -> bool:
        data = content.get("data") or {}
        if data.get("type") != "run_started" or self.run_id is not None:
            return False
        self._comm, self.run_id = content.get("comm_id"), data.get("run_id")
        self.model = str(data.get("model") or "")
        return True

    def _message(self, data: dict[str, Any]) -> bool:
        if data.get("type") == "events":
            for event in data.get("events") or []:
                self._event(event)
            return True
        if data.get("type") == "run_finished":
            self.answer = data.get("answer")
            self.error = data.get("error") or self.error
            self.stopped = data.get("stop") in ("user", "interrupt")
            self.done = True
            return True
        return False

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("kind") in ("root_reply", "subcall_finished"):
            known, _ = attempt(lambda: event_from_dict(event))  # the kernel's: a malformed one counts not
            if known is not None and is_lm_call(known):
                self.usage.add(known)
        if event.get("run_id") != self.run_id:  # a child run's events count in its parent's step
            return self._child(event)
        kind, step = event.get("kind"), event.get("step")
        if kind == "step_started" and isinstance(step, int):
            self.steps[step] = StepLine(step, code=str(event.get("code", "")))
        elif kind == "step_finished" and step in self.steps:
            line = self.steps[step]
            line.output, line.error = str(event.get("output", "")), event.get("error")
        elif kind == "warning":
            self.warnings.append((str(event.get("code", "")), str(event.get("text", ""))))
        self._child(event)

    def _child(self, event: dict[str, Any]) -> None:
        if event.get("kind") != "subcall_finished" or not self.steps:
            return
        line = self.steps.get(event.get("step")) or self.steps[max(self.steps)]
        line.calls += 1
        line.tokens_in += int(event.get("input_tokens") or 0)
        line.tokens_out += int(event.get("output_tokens") or 0)

    # -- the chat's text ----------------------------------------------------------------------------
    def markdown(self) -> str:
        """The whole message as it stands; safe to render, with no secret in it."""
        over = ", ".join(name(v) for v in self.variables)
        head = f"RLM over {over}" + (f" · {one_line(self.model)}" if self.model else "")
        parts = [head, *(one_line(n) for n in self.notices)]
        parts += [s.markdown() for s in self.steps.values()]
        parts += [f"⚠ {_MARKS.get(code, one_line(code))}: {one_line(text)}" for code, text in self.warnings]
        parts += self._ending()
        return "\n\n".join(parts)

    def _ending(self) -> Iterable[str]:
        if self.stopped:
            yield "**Stopped.** The partial run is in the kernel's `_rlm_chat`."
        elif self.error:
            yield f"**Error:** {one_line(self.error)}"
        if self.answer is not None:
            marks = [label for code, label in _MARKS.items() if any(c == code for c, _ in self.warnings)]
            flag = f" ({', '.join(marks)})" if marks else ""
            yield f"**Answer**{flag}:\n\n{safe.markdown_source(self.answer)}"
