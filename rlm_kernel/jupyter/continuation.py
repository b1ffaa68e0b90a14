"""What a magic's question goes on from: a named session (``--session NAME``: one REPL and one
conversation, kept until ``%rlm end NAME``) or a recorded run's root step (``--continue-from
RUN:STEP``, a rewind).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from ..errors import RLMError
from ..events import Event
from ..rewind import Branch, branch_at
from ..rlm import RLM, RLMResult
from ..session import Session
from ..trajectory import default_log_dir, load

__all__ = ["end_session", "find_branch", "session_for"]


def session_for(
    sessions: MutableMapping[str, Session],
    name: str,
    rlm: RLM,
    context: Any,
    namespace: dict[str, Any] | None,
) -> Session:
    """The session ``--session NAME`` names: started by its first cell, whose settings it keeps."""
    session = sessions.get(name)
    if session is None:
        session = sessions[name] = rlm.session(context, namespace=namespace)
    elif session.rlm.config != rlm.config:
        raise UsageError(
            f"--session {name} keeps the settings of its first cell; to change them, "
            f"%rlm end {name} and start it again."
        )
    return session


def end_session(sessions: MutableMapping[str, Session], name: str) -> str:
    """``%rlm end NAME``: the session closed (its kernel, with a kernel executor); the line to show."""
    session = sessions.pop(name, None)
    if session is None:
        known = ", ".join(sessions) or "none"
        raise UsageError(f"%rlm end: no session named {name!r} (sessions: {known}).")
    session.close()
    return f"Session {name} ended ({len(session.results)} questions)."


def find_branch(spec: str, rlm: RLM, namespace: Mapping[str, Any]) -> Branch:
    """``RUN:STEP`` of ``--continue-from``: the recorded run, found as the notebook's variable
    holding its result, a trajectory file, or its run id in the log folder."""
    run, _, step = spec.rpartition(":")
    if not run or not step.strip().isdigit():
        raise UsageError(f"--continue-from takes RUN:STEP, as in _rlm:2, not {spec!r}")
    events, run_id = _recorded(run, rlm, namespace)
    try:
        return branch_at(events, int(step), run_id)
    except RLMError as exc:
        raise UsageError(f"--continue-from: {exc}") from None


def _recorded(run: str, rlm: RLM, namespace: Mapping[str, Any]) -> tuple[list[Event], str | None]:
    """The events of recorded run ``run`` and its id, where its file does not give it."""
    held = namespace.get(run)
    if isinstance(held, RLMResult):
        return held.trajectory, held.run_id
    if Path(run).expanduser().is_file():
        return load(Path(run).expanduser()), None
    folder = Path(rlm.config.log_dir or default_log_dir())
    found = sorted(folder.glob(f"rlm-*-{run}.jsonl")) if run.isalnum() else []
    if not found:
        raise UsageError(
            f"--continue-from: no run {run!r}: name the variable holding its result, its "
            f"trajectory file, or a run id whose trajectory is in {folder}"
        )
    return load(found[-1]), run
