"""The chat's run in a cell of its notebook, where the server holds the notebook live: with
jupyter-collaboration (its ``jupyter_server_ydoc`` extension, RTC on) the notebook open in
JupyterLab is a shared document (jupyter_ydoc's ``YNotebook``), and a cell inserted into it appears
at once in every window that shows the notebook.

The persona inserts one code cell at the end of the notebook, with the ``%%rlm`` command it runs
as its source, and puts the run's outputs into it as the kernel sends them, as JupyterLab does for
a cell it runs: the live widget (an ipywidgets ``display_data``; the lab's widget manager has its
model, since the kernel's comm messages go to every client), replaced by the static view when the
run ends, the answer, printed notices and errors. The cell is trusted, as a cell run in the lab is,
so the widget renders.

Only the live document is edited, never the file: the notebook is saved as the user's own edits
are (JupyterLab's autosave, or File > Save). With no RTC provider, with RTC turned off, or with
the notebook not open (no live room), there is no cell.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..foreign import attempt, settled

__all__ = ["LiveCell", "live_notebook"]

log = logging.getLogger(__name__)

_OUTPUTS = ("stream", "display_data", "execute_result", "error")


async def live_notebook(serverapp: Any, path: str) -> Any | None:
    """The live ``YNotebook`` of ``path`` (relative to the server's root), or None: no active
    ``jupyter_server_ydoc``, RTC disabled, the notebook not open, or any failure to reach it."""
    settings = getattr(getattr(serverapp, "web_app", None), "settings", None) or {}
    collaboration = settings.get("jupyter_server_ydoc")
    if collaboration is None or getattr(collaboration, "disable_rtc", False):
        return None
    # copy=False: the room's own document; create=False (the default): never a new room. A
    # provider of another version, a file the id manager cannot index, ...: no cell.
    notebook, error = await settled(
        collaboration.get_document(path=path, content_type="notebook", file_format="json", copy=False)
    )
    if error is not None:
        log.warning("The live notebook %s could not be reached: the run gets no cell", path, exc_info=error)
        return None
    return notebook if notebook is not None and hasattr(notebook, "ycells") else None


def _stream_text(text: str) -> str:
    """A stream's text as a terminal shows it: a carriage return overwrites its line (a progress
    bar); a line that ends in one keeps its text until the next write replaces it."""
    lines = text.replace("\r\n", "\n").split("\n")
    kept = []
    for line in lines:
        body = line.rstrip("\r")
        kept.append(body.rsplit("\r", 1)[-1] + line[len(body) :])
    return "\n".join(kept)


class LiveCell:
    """One code cell of a live notebook, fed a run's iopub messages in order."""

    def __init__(self, notebook: Any, ycell: Any) -> None:
        self.notebook = notebook
        self.ycell = ycell
        self.id = str(ycell.get("id"))
        self.alive = True  # False once an edit failed (the cell deleted, the room gone)
        self._displays: dict[str, list[int]] = {}  # display_id -> indices of its outputs
        self._clear_next = False

    @classmethod
    def insert(cls, notebook: Any, source: str) -> LiveCell:
        """A new code cell with ``source``, at the end of ``notebook``, shown as running."""
        ycell = notebook.create_ycell(
            {
                "cell_type": "code",
                "source": source,
                "metadata": {"trusted": True},
                "outputs": [],
                "execution_count": None,
            }
        )
        with notebook.ydoc.transaction():
            notebook.ycells.append(ycell)
            ycell["execution_state"] = "running"
        return cls(notebook, ycell)

    def feed(self, msg: dict[str, Any]) -> None:
        """Take one iopub message of the run: its outputs go into the cell."""
        self._edit(lambda: self._feed_all(msg.get("msg_type"), msg.get("content") or {}))

    def finish(self) -> None:
        """The run ended: the cell is no longer shown as running."""
        self._edit(lambda: self.ycell.__setitem__("execution_state", "idle"))

    def _edit(self, change: Callable[[], None]) -> None:
        """One change of the cell; one that fails (the cell deleted, the room gone) is its last:
        the chat goes on without the cell."""
        if not self.alive:
            return
        _, error = attempt(change)
        if error is not None:
            log.warning("The run's cell %s is no longer updated: %r", self.id, error, exc_info=error)
            self.alive = False

    def _feed_all(self, kind: Any, content: dict[str, Any]) -> None:
        with self.notebook.ydoc.transaction():
            self._feed(kind, content)

    # -- outputs, as JupyterLab's output area keeps them ------------------------------------------
    def _feed(self, kind: Any, content: dict[str, Any]) -> None:
        if kind == "clear_output":
            if content.get("wait"):
                self._clear_next = True
            else:
                self._clear()
            return
        if kind == "update_display_data":
            self._update(content)
            return
        if kind not in _OUTPUTS:
            return
        if self._clear_next:
            self._clear()
        output = _output(kind, content)
        outputs = self.ycell["outputs"]
        if kind == "stream" and len(outputs) and self._same_stream(outputs[len(outputs) - 1], output):
            self._append_stream(outputs[len(outputs) - 1], output["text"])
            return
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id:
            self._displays.setdefault(str(display_id), []).append(len(outputs))
        outputs.append(_youtput(output))

    def _clear(self) -> None:
        self.ycell["outputs"].clear()
        self._displays.clear()
        self._clear_next = False

    def _update(self, content: dict[str, Any]) -> None:
        display_id = (content.get("transient") or {}).get("display_id")
        outputs = self.ycell["outputs"]
        for index in self._displays.get(str(display_id), []):
            if index < len(outputs):
                outputs[index] = _youtput(_output("display_data", content))

    @staticmethod
    def _same_stream(last: Any, output: dict[str, Any]) -> bool:
        return last.get("output_type") == "stream" and last.get("name") == output["name"]

    @staticmethod
    def _append_stream(last: Any, text: str) -> None:
        from pycrdt import Text

        ytext = last["text"]
        old = str(ytext)
        shown = _stream_text(old + text)
        if isinstance(ytext, Text) and shown.startswith(old):
            ytext += shown[len(old) :]
        elif isinstance(ytext, Text):
            ytext.clear()
            ytext += shown
        else:
            last["text"] = Text(shown)


def _output(kind: Any, content: dict[str, Any]) -> dict[str, Any]:
    """The nbformat output of one iopub message."""
    if kind == "stream":
        text = _stream_text(str(content.get("text", "")))
        return {"output_type": "stream", "name": content.get("name", "stdout"), "text": text}
    if kind == "error":
        return {
            "output_type": "error",
            "ename": content.get("ename", ""),
            "evalue": content.get("evalue", ""),
            "traceback": list(content.get("traceback") or []),
        }
    data, metadata = content.get("data") or {}, content.get("metadata") or {}
    output = {"output_type": kind, "data": data, "metadata": metadata}
    if kind == "execute_result":
        output["execution_count"] = content.get("execution_count")
    return output


def _youtput(output: dict[str, Any]) -> Any:
    """An output as the shared notebook keeps it (a stream's text is a shared text)."""
    from pycrdt import Map, Text

    if output["output_type"] == "stream":
        return Map({**output, "text": Text(output["text"])})
    return Map(output)
