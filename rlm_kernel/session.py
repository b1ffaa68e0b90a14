"""A session: questions over one context that share one REPL and one conversation.

The first question is an ordinary run. Each later one is a run of its own in the trajectory
(``run_started.session`` names the session, ``follows`` the run before it) that starts from the
conversation where the last one ended, with the REPL's variables as they were: the context is
loaded once, and compaction keeps the growing conversation inside the window.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from .driver import Approve, adrive, drive
from .errors import ConfigError
from .events import Event
from .executors import make_executor

if TYPE_CHECKING:
    from .engine import Finish, Followup
    from .rlm import RLM
    from .run_result import OpenRun, RLMResult

__all__ = ["Session"]

_SAME: Any = object()


class Session:
    """``rlm.session(context)``: ``ask`` any number of questions, then ``close`` (or ``with``)."""

    def __init__(
        self,
        rlm: RLM,
        context: Any,
        *,
        namespace: MutableMapping[str, Any] | None = None,
        subscribers: tuple[Callable[[Event], None], ...] = (),
    ) -> None:
        self.rlm = rlm
        self.context = context
        self.session_id = f"s-{uuid.uuid4().hex[:12]}"
        self.subscribers = subscribers
        self.results: list[RLMResult] = []
        config = rlm.config
        self.executor = make_executor(
            config.executor,
            config.executor_kwargs,
            tag=self.session_id,
            namespace=rlm._with_variables(namespace) if config.executor == "local" else namespace,
        )
        self._follows: Followup | None = None
        self._closed = False

    def ask(
        self,
        question: str | None,
        *,
        context: Any = _SAME,
        subscribers: tuple[Callable[[Event], None], ...] = (),
    ) -> RLMResult:
        """Answer ``question`` in this session's REPL and conversation; ``context`` replaces the
        context for this question and those after it (the REPL's other variables stay);
        ``subscribers`` receive this question's events, besides the session's."""
        run = self._open(question, context, subscribers)
        return self._closed_run(run, drive(run.parts))

    async def aask(
        self,
        question: str | None,
        *,
        context: Any = _SAME,
        subscribers: tuple[Callable[[Event], None], ...] = (),
        approve: Approve | None = None,
    ) -> RLMResult:
        """The async twin of :meth:`ask`; ``approve`` as :meth:`RLM.acompletion`'s."""
        run = self._open(question, context, subscribers)
        return self._closed_run(run, await adrive(run.parts, approve))

    def _open(
        self, question: str | None, context: Any, subscribers: tuple[Callable[[Event], None], ...]
    ) -> OpenRun:
        if self._closed:
            raise ConfigError("This session is closed: start another with rlm.session(context).")
        if context is not _SAME:
            self.context = context
        return self.rlm.open(
            self.context,
            question,
            executor=self.executor,
            subscribers=(*self.subscribers, *subscribers),
            follows=self._follows,
            session=self.session_id,
        )

    def resume(self, follows: Followup) -> None:
        """Go on from a conversation an earlier process had (a saved session loaded again): the
        next question follows ``follows``, and the runs keep naming the session they began in.
        The REPL is this session's own: the earlier one's variables are gone."""
        if follows.session:
            self.session_id = follows.session
        self._follows = follows

    def _closed_run(self, run: OpenRun, finish: Finish) -> RLMResult:
        result = run.close(finish, keep_executor=True)
        self._follows = run.parts.run.followup(self.session_id)
        self.results.append(result)
        return result

    def close(self) -> None:
        """Shut the REPL (its kernel, with a kernel executor)."""
        if not self._closed:
            self._closed = True
            self.executor.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session({self.session_id!r}, questions={len(self.results)})"
