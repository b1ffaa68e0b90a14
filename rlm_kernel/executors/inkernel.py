"""The kernel's half of the ``kernel`` and ``gateway`` executors, imported inside the kernel.

The host talks to the kernel over the kernel's own stdin channel (the messages are declared in
:mod:`.bridge`). The host starts one cell, :func:`serve`, which asks the host for work with
``input()`` and carries out each command it gets (bind a namespace, run a step, resolve a FINAL,
...). The REPL's ``llm_query`` and friends ask the same way and wait for the reply; while one
waits, the host may send a child run's step to run first, so child runs share this kernel and its
one thread, each in a namespace of its own. Threads of the code that call ``llm_query`` at once
take turns; while a child's step runs, the parent's threads wait for it.

Nothing here holds a key or an address: sub-calls are requests the host answers from its pool.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import json
import os
import resource
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..foreign import attempt
from ..helpers import Helpers
from ..prompts import context_metadata
from ..protocol import FinalDirective
from ..repl import truncate
from ..subcall_api import batch_images, declared, errors_in, prompt_list
from . import bridge, transfer
from .base import ExecResult
from .bridge import MARK, MAX_REQUEST, TooLarge
from .local import STOPPED, LocalExecutor

__all__ = ["MARK", "serve", "limit", "isolation_problem"]

# The channel carries one request at a time, whichever thread of the code asks. A call may be sent
# only under the name of the namespace whose command runs innermost (the host refuses any other),
# and a command's result only once the commands nested in it (a child's step run in another thread's
# rlm_query) are done. Threads wait here for their turn.
_channel = threading.Condition()
_busy = False  # a request is on the channel, its thread waiting in input()
_running: list[tuple[int, str]] = []  # (id, tag) of the commands being carried out, innermost last
# The clock of the times this half reports, taken before any step runs: code that replaces
# time.perf_counter (with one that gives inf, say) changes its own clock, not these times.
_clock = time.perf_counter


def _take(ready: Callable[[], bool], pop: bool = False) -> None:
    global _busy
    with _channel:
        _channel.wait_for(lambda: not _busy and ready())
        _busy = True
        if pop:
            _running.pop()


def _give(push: tuple[int, str] | None = None) -> None:
    global _busy
    with _channel:
        _busy = False
        if push is not None:
            _running.append(push)
        _channel.notify_all()


def _ask(request: Any, tag: str | None = None) -> dict[str, Any]:
    """Send a request to the host (a call under ``tag``, or the serve cell's first) and return its
    value; commands the host sends meanwhile (a child run's step, say) are carried out first, and
    their results sent back, in this same wait."""
    text = bridge.encode(request)  # too large: TooLarge, raised in the code that asked
    _take(lambda: tag is None or not _running or _running[-1][1] == tag)
    held = True  # the channel is this thread's
    try:
        while True:
            reply = json.loads(input(MARK + text))
            op = reply.pop("op")
            if op == "value":
                return reply
            if op == "quit":
                raise _Quit
            id_ = reply.pop("id")
            command = bridge.COMMANDS[op](**reply)
            _give(push=(id_, command.tag))
            held = False
            try:
                result = _SERVER.handle(command)
            finally:
                _take(lambda id_=id_: _running[-1][0] == id_, pop=True)
                held = True
            try:
                text = bridge.encode(bridge.Result(id_, result))
            except TooLarge:
                failed = f"the {op} result is too large to leave the kernel: print less, or answer with less"
                text = bridge.encode(bridge.Result(id_, bridge.Failed(failed)))
    finally:
        if held:
            _give()


class _Quit(Exception):
    pass


def _groups(items: Sequence[Any]) -> Iterator[list[Any]]:
    """A batch in groups that each fit in one request."""
    group: list[Any] = []
    size = 0
    for item in items:
        n = len(json.dumps(item, default=str))
        if group and size + n > MAX_REQUEST // 2:
            yield group
            group, size = [], 0
        group.append(item)
        size += n
    yield group


class _Bridge:
    """The sub-call functions of one namespace: each call is a request to the host."""

    def __init__(self, tag: str) -> None:
        self._tag = tag

    def _call(self, request: Any) -> Any:
        try:
            reply = _ask(request, self._tag)
        except TooLarge as exc:
            raise ValueError(str(exc)) from None
        if reply.get("error") is not None:
            raise bridge.raised(reply)
        # A failed sub-call's reply is a SubcallError here as on the host: from the fields the host
        # sent with it, or from its text where it sent none.
        return errors_in(reply["value"], reply.get("subcall_errors"))

    @declared
    def llm_query(self, prompt: str, model: str | None = None, images: Any = None) -> str:
        return self._call(bridge.LlmQuery(self._tag, str(prompt), model, bridge.images_out(images)))

    @declared
    def llm_query_batched(
        self, prompts: Sequence[str], model: str | None = None, images: Sequence[Any] | None = None
    ) -> list[str]:
        prompts = [str(p) for p in prompt_list(prompts, "llm_query_batched")]
        if images is None:
            return [
                reply
                for group in _groups(prompts)
                for reply in self._call(bridge.LlmQueryBatched(self._tag, group, model))
            ]
        wired = [bridge.images_out(x) for x in batch_images(images, len(prompts))]
        pairs = list(zip(prompts, wired, strict=True))
        return [
            reply
            for group in _groups(pairs)
            for reply in self._call(
                bridge.LlmQueryBatched(self._tag, [p for p, _ in group], model, [i for _, i in group])
            )
        ]

    @declared
    def ask_batched(self, conversations: Sequence[list[Any]], max_tokens: int | None = None) -> list[str]:
        return [
            reply
            for group in _groups(list(conversations))
            for reply in self._call(bridge.AskBatched(self._tag, group, max_tokens))
        ]

    @declared
    def rlm_query(self, prompt: str, context: Any = None) -> str:
        return self.rlm_query_batched([prompt], None if context is None else [context])[0]

    @declared
    def rlm_query_batched(self, prompts: Sequence[str], contexts: Sequence[Any] | None = None) -> list[str]:
        prompts = [str(p) for p in prompt_list(prompts, "rlm_query_batched")]
        refs = None
        if contexts is not None:  # the contexts stay here; the host gets a name and a description
            refs = [_SERVER.keep(c) for c in contexts]
        return self._call(bridge.RlmQueryBatched(self._tag, prompts, refs))


def _host_function(tag: str, declared: dict[str, str]) -> Any:
    """A function that runs on the host (a tool): arguments and result cross as JSON."""
    name = declared["name"]

    def call(*args: Any, **kwargs: Any) -> Any:
        reply = _ask(bridge.HostCall(tag, name, list(args), kwargs), tag)
        if reply.get("error") is not None:
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

    def keep(self, context: Any) -> bridge.ContextRef:
        self._refs += 1
        ref = f"k{self._refs}"
        self.contexts[ref] = context
        return bridge.ContextRef(ref, _jsonable(context_metadata(context)))

    def handle(self, command: Any) -> Any:
        try:
            # A command that failed is the host's to report, not a dead kernel.
            result, failed = attempt(lambda: getattr(self, "op_" + command.op)(command))
        except KeyboardInterrupt:
            return bridge.Failed(STOPPED)
        if failed is not None:
            return bridge.Failed("".join(traceback.format_exception_only(type(failed), failed)).strip())
        return result

    def op_load(self, c: bridge.Load) -> bridge.Loaded:
        """Load a context once: from a file the host wrote (same machine; the host removes it), or
        in parts over this channel (a remote kernel)."""
        started = _clock()
        if c.path is not None:
            with open(c.path, "rb", buffering=0) as f:
                value = transfer.read(f, c.format, c.length, c.kind)
        else:
            data = io.BytesIO()
            for i in range(c.parts):
                part = _ask(bridge.Part(c.tag, c.ref, i), c.tag)
                data.write(base64.b64decode(part["value"]))
            data.seek(0)
            value = transfer.read(data, c.format)
        self.contexts[c.ref] = value
        return bridge.Loaded(max(_clock() - started, 0.0))

    def op_bind(self, c: bridge.Bind) -> bridge.Done:
        value = self.contexts[c.context["ref"]] if "ref" in c.context else c.context["value"]
        calls = _Bridge(c.tag) if c.subcalls else None
        bound = Helpers(value, calls).bound() if c.helpers else {}
        names = {k: v for k, v in bound.items() if k in c.helpers}
        names.update({d["name"]: _host_function(c.tag, d) for d in c.host})
        # A session's next question binds its tag again: the namespace, with its variables, stays.
        executor = self.executors.get(c.tag) or LocalExecutor(tag=c.tag)
        executor.bind(value, calls, names or None)
        self.executors[c.tag] = executor
        self.output_cap = c.output_cap
        return bridge.Done()

    def op_exec(self, c: bridge.Exec) -> bridge.Executed:
        executor = self.executors[c.tag]
        started = _clock()
        with _everything_printed() as printed:
            try:
                result = executor.run(c.code, step=c.step)
            except KeyboardInterrupt:
                result = ExecResult(error=STOPPED)
        elapsed = max(_clock() - started, 0.0)
        if printed[0] or printed[1]:
            result = dataclasses.replace(
                result, stdout=result.stdout + printed[0], stderr=result.stderr + printed[1]
            )
        outcome = executor.settle(result)
        r = outcome.result
        cap = self.output_cap
        return bridge.Executed(
            stdout=truncate(r.stdout, cap)[0],
            stderr=truncate(r.stderr, cap)[0],
            value=None if r.value is None else truncate(r.value, cap)[0],
            error=None if r.error is None else truncate(r.error, cap)[0],
            elapsed_s=elapsed,
            answer_ready=outcome.answer_ready,
            answer=outcome.answer,
            restored=list(outcome.restored),
        )

    def op_resolve(self, c: bridge.Resolve) -> bridge.Resolved:
        directive = FinalDirective(c.kind, c.argument)  # type: ignore[arg-type]
        content, problem = self.executors[c.tag].resolve(directive)
        return bridge.Resolved(content, problem)

    def op_close(self, c: bridge.Close) -> bridge.Done:
        executor = self.executors.pop(c.tag, None)
        if executor is not None:
            executor.close()
        return bridge.Done()

    def op_forget(self, c: bridge.Forget) -> bridge.Done:
        for ref in c.refs:
            self.contexts.pop(ref, None)
        return bridge.Done()


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


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


_SERVER = _Server()


def serve() -> None:
    """Carry out the host's commands until it says quit (the one cell the host runs). No command
    runs when it starts, whatever an interrupt left of the last one."""
    global _busy
    with _channel:
        _running.clear()
        _busy = False
    try:
        _ask(bridge.Ready())
    except _Quit:
        pass


def isolation_problem() -> str | None:
    """Why this kernel is not in a sandbox of its own, or None: it shares the host's processes,
    reaches a network, or holds capabilities."""
    try:
        with open("/proc/1/cmdline", "rb") as f:
            first = f.read()
    except OSError:
        first = b""
    if os.getppid() != 1 or b"/run/rlm/init.py" not in first:
        return "it shares its host's processes"
    names = [name for _, name in socket.if_nameindex()]
    if names != ["lo"]:
        return f"it reaches a network ({', '.join(n for n in names if n != 'lo')})"
    with open("/proc/self/status") as f:
        effective = next(line.split()[1] for line in f if line.startswith("CapEff:"))
    if int(effective, 16):
        return "it holds capabilities"
    return None


def limit(memory_bytes: int | None, cpu_s: float | None, isolated: bool = False) -> None:
    """The kernel's own limits, set before any step runs: address space (``memory_bytes`` more than
    it holds now, reserved by its threads and libraries, so that a step asking for more than it may
    have gets a MemoryError; its sandbox holds all its processes to ``memory_bytes`` of memory
    together) and CPU seconds from now. With ``isolated``, first that it is in a sandbox of its own."""
    if isolated and (why := isolation_problem()) is not None:
        raise RuntimeError(f"the kernel is not sandboxed: {why}")
    if memory_bytes:
        with open("/proc/self/statm") as f:
            reserved = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (reserved + memory_bytes, reserved + memory_bytes))
    if cpu_s:
        used = resource.getrusage(resource.RUSAGE_SELF)
        now = int(used.ru_utime + used.ru_stime) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (now + int(cpu_s), now + int(cpu_s) + 5))
    sys.setrecursionlimit(min(sys.getrecursionlimit(), 3000))
