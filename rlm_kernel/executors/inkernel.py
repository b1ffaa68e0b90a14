"""The kernel's half of the ``kernel`` and ``gateway`` executors, imported inside the kernel.

The host talks to the kernel over the kernel's own stdin channel. The host starts one cell,
:func:`serve`, which never returns while the executor is in use: it asks the host for work with
``input()`` (a JSON request) and the host's ``input_reply`` is the next command (bind a
namespace, run a step, resolve a FINAL, ...). The REPL's ``llm_query`` and friends ask the same way
and wait for the reply; while one waits, the host may send it a child run's step to run first,
so child runs share this kernel and its one thread, each in a namespace of its own.

Nothing here holds a key or an address: sub-calls are requests the host answers from its pool.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import json
import os
import pickle
import resource
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

from ..helpers import Helpers
from ..prompts import context_metadata
from ..protocol import FinalDirective
from ..repl import truncate
from ..subcalls import prompt_list
from .base import ExecResult
from .local import STOPPED, LocalExecutor

__all__ = ["MARK", "serve", "limit"]

MARK = "\x1frlm:"  # starts every request this module makes, so the host knows its own prompts


def _ask(request: dict[str, Any]) -> dict[str, Any]:
    """Send a request to the host and return its value; commands the host sends meanwhile (a child
    run's step, say) are carried out first, and their results sent back, in this same wait."""
    while True:
        reply = json.loads(input(MARK + json.dumps(request)))
        op = reply.pop("op")
        if op == "value":
            return reply
        if op == "quit":
            raise _Quit
        request = {"op": "result", "id": reply.pop("id"), **_SERVER.handle(op, reply)}


class _Quit(Exception):
    pass


class _Bridge:
    """The sub-call functions of one namespace: each call is a request to the host."""

    def __init__(self, tag: str) -> None:
        self._tag = tag

    def _call(self, fn: str, **args: Any) -> Any:
        reply = _ask({"op": "call", "fn": fn, "tag": self._tag, **args})
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["value"]

    def llm_query(self, prompt: str, model: str | None = None) -> str:
        """Ask the sub-model one prompt; returns its reply (or a string starting with [llm_query error])."""
        return self._call("llm_query", prompt=str(prompt), model=model)

    def llm_query_batched(self, prompts: Sequence[str], model: str | None = None) -> list[str]:
        """Ask many prompts at once, concurrently; replies come back in the prompts' order."""
        prompts = prompt_list(prompts, "llm_query_batched")
        return self._call("llm_query_batched", prompts=[str(p) for p in prompts], model=model)

    def ask_batched(self, conversations: Sequence[list[Any]], max_tokens: int | None = None) -> list[str]:
        return self._call("ask_batched", conversations=list(conversations), max_tokens=max_tokens)

    def rlm_query(self, prompt: str, context: Any = None) -> str:
        """Hand a sub-task to a child run with its own REPL (a plain llm_query at max depth)."""
        return self.rlm_query_batched([prompt], None if context is None else [context])[0]

    def rlm_query_batched(self, prompts: Sequence[str], contexts: Sequence[Any] | None = None) -> list[str]:
        prompts = prompt_list(prompts, "rlm_query_batched")
        refs = None
        if contexts is not None:  # the contexts stay here; the host gets a name and a description
            refs = [_SERVER.keep(c) for c in contexts]
        return self._call("rlm_query_batched", prompts=[str(p) for p in prompts], contexts=refs)


def _host_function(tag: str, declared: dict[str, str]) -> Any:
    """A function that runs on the host (a tool): arguments and result cross as JSON."""
    name = declared["name"]

    def call(*args: Any, **kwargs: Any) -> Any:
        reply = _ask({"op": "call", "fn": "host", "tag": tag, "name": name, "args": args, "kwargs": kwargs})
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["value"]

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{declared['signature']}\n\n{declared['doc']}".strip()
    return call


class _Server:
    def __init__(self) -> None:
        self.executors: dict[str, LocalExecutor] = {}
        self.contexts: dict[str, Any] = {}
        self.output_cap = 1_000_000
        self._refs = 0

    def keep(self, context: Any) -> dict[str, Any]:
        self._refs += 1
        ref = f"k{self._refs}"
        self.contexts[ref] = context
        return {"ref": ref, "meta": _jsonable(context_metadata(context))}

    def handle(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return getattr(self, "op_" + op)(**args)
        except KeyboardInterrupt:
            return {"error": STOPPED}
        except Exception as exc:  # a command that failed is the host's to report, not a dead kernel
            return {"error": "".join(traceback.format_exception_only(type(exc), exc)).strip()}

    def op_load(
        self,
        ref: str,
        tag: str,
        format: str,
        path: str | None = None,
        parts: int = 0,
        length: int = 0,
        kind: int = 0,
    ) -> dict[str, Any]:
        """Load a context once: from a file the host wrote (same machine), or in parts over this
        channel (a remote kernel)."""
        started = time.perf_counter()
        if path is not None:
            with open(path, "rb", buffering=0) as f:
                value = _read(f, format, length, kind)
            os.unlink(path)
        else:
            data = io.BytesIO()
            for i in range(parts):
                part = _ask({"op": "call", "fn": "part", "tag": tag, "ref": ref, "index": i})
                data.write(base64.b64decode(part["value"]))
            data.seek(0)
            value = _read(data, format)
        self.contexts[ref] = value
        return {"load_s": time.perf_counter() - started}

    def op_bind(
        self,
        tag: str,
        context: dict[str, Any],
        subcalls: bool,
        helpers: list[str],
        output_cap: int,
        host: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        value = self.contexts[context["ref"]] if "ref" in context else context["value"]
        bridge = _Bridge(tag) if subcalls else None
        bound = Helpers(value, bridge).bound() if helpers else {}
        names = {k: v for k, v in bound.items() if k in helpers}
        names.update({d["name"]: _host_function(tag, d) for d in host or ()})
        executor = LocalExecutor(tag=tag)
        executor.bind(value, bridge, names or None)
        self.executors[tag] = executor
        self.output_cap = output_cap
        return {}

    def op_exec(self, tag: str, code: str, step: int) -> dict[str, Any]:
        executor = self.executors[tag]
        started = time.perf_counter()
        with _everything_printed() as printed:
            try:
                result = executor.run(code, step=step)
            except KeyboardInterrupt:
                result = ExecResult(error=STOPPED, elapsed_s=time.perf_counter() - started)
        if printed[0] or printed[1]:
            result = dataclasses.replace(
                result, stdout=result.stdout + printed[0], stderr=result.stderr + printed[1]
            )
        outcome = executor.settle(result)
        r = outcome.result
        cap = self.output_cap
        return {
            "stdout": truncate(r.stdout, cap)[0],
            "stderr": truncate(r.stderr, cap)[0],
            "value": None if r.value is None else truncate(r.value, cap)[0],
            "error": None if r.error is None else truncate(r.error, cap)[0],
            "elapsed_s": r.elapsed_s,
            "answer_ready": outcome.answer_ready,
            "answer": outcome.answer,
            "restored": list(outcome.restored),
        }

    def op_resolve(self, tag: str, kind: str, argument: str) -> dict[str, Any]:
        content, problem = self.executors[tag].resolve(FinalDirective(kind, argument))  # type: ignore[arg-type]
        return {"content": content, "problem": problem}

    def op_close(self, tag: str) -> dict[str, Any]:
        executor = self.executors.pop(tag, None)
        if executor is not None:
            executor.close()
        return {}

    def op_forget(self, refs: list[str]) -> dict[str, Any]:
        for ref in refs:
            self.contexts.pop(ref, None)
        return {}


@contextlib.contextmanager
def _everything_printed() -> Iterator[list[str]]:
    """While a step runs, what its other threads print and what is written to file descriptors 1
    and 2 (its subprocesses, C code) is the step's output too: ``[stdout, stderr]`` after."""
    printed = ["", ""]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    saved_fds = [os.dup(1), os.dup(2)]
    saved = sys.stdout, sys.stderr
    threads = io.StringIO(), io.StringIO()
    os.dup2(files[0].fileno(), 1)
    os.dup2(files[1].fileno(), 2)
    sys.stdout, sys.stderr = threads
    try:
        yield printed
    finally:
        sys.stdout, sys.stderr = saved
        for fd, saved_fd, f, buffer, i in zip((1, 2), saved_fds, files, threads, (0, 1), strict=True):
            os.dup2(saved_fd, fd)
            os.close(saved_fd)
            f.seek(0)
            printed[i] = buffer.getvalue() + f.read().decode("utf-8", "replace")
            f.close()


# -- a large str, copied as CPython holds it ----------------------------------------------------
# Encoding 200 MB to UTF-8 and decoding it again costs a second copy in each process and most of the
# time; CPython's own layout (one, two or four bytes a character) is copied as it is instead, from
# the host's string into a file and from the file into a new string of the kernel's.
_MAXCHAR = {1: 0xFF, 2: 0xFFFF, 4: 0x10FFFF}


def str_layout(text: str) -> tuple[int, int, int] | None:
    """(bytes per character, address, size in bytes) of a compact CPython string; None elsewhere."""
    if sys.implementation.name != "cpython" or type(text) is not str or not text:
        return None
    if text.isascii():
        kind, header = 0, sys.getsizeof("") - 1
    else:
        header = sys.getsizeof("\xff") - 2
        kind = (sys.getsizeof(text) - header) // (len(text) + 1)
        if kind not in (1, 2, 4) or header + (len(text) + 1) * kind != sys.getsizeof(text):
            return None
    size = len(text) * max(kind, 1)
    return kind, id(text) + header, size


def _new_str(f: Any, length: int, kind: int) -> str:
    """A new string of ``length`` characters of ``kind`` (0: ASCII), filled from ``f``."""
    import ctypes

    new = ctypes.pythonapi.PyUnicode_New
    new.restype, new.argtypes = ctypes.py_object, (ctypes.c_ssize_t, ctypes.c_uint32)
    text = new(length, _MAXCHAR.get(kind, 0x7F))
    layout = str_layout(text)
    if layout is None or layout[0] != kind:
        raise ValueError("this interpreter lays strings out differently from the host's")
    view = memoryview((ctypes.c_char * layout[2]).from_address(layout[1])).cast("B")
    done = 0
    while done < layout[2]:
        n = f.readinto(view[done : done + (8 << 20)])
        if not n:
            raise ValueError(f"the context file ended after {done:,} of {layout[2]:,} bytes")
        done += n
    return text


def _read(f: Any, format: str, length: int = 0, kind: int = 0) -> Any:
    if format == "pickle":
        return pickle.load(f)  # noqa: S301 - the host pickled it, for this kernel
    if format == "str-raw":
        return _new_str(f, length, kind)
    data = f.read()
    if format == "bytes":
        return data
    text = data.decode("utf-8", "surrogatepass")
    del data
    return text


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


_SERVER = _Server()


def serve() -> None:
    """Carry out the host's commands until it says quit (the one cell the host runs)."""
    try:
        _ask({"op": "ready", "pid": os.getpid()})
    except _Quit:
        pass


def limit(memory_bytes: int | None, cpu_s: float | None, workdir: str | None) -> None:
    """The kernel's limits: address space, CPU seconds from now, and its working directory."""
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_s:
        used = resource.getrusage(resource.RUSAGE_SELF)
        now = int(used.ru_utime + used.ru_stime) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (now + int(cpu_s), now + int(cpu_s) + 5))
    if workdir:
        os.chdir(workdir)
    sys.setrecursionlimit(min(sys.getrecursionlimit(), 3000))
