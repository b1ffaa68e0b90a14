"""One llama.cpp server per machine and user, shared by every process that asks for the same model.

Two processes that each load the model in-process (:func:`~rlm_kernel.lm.llama_server.shared_server`)
hold it twice and fight for the cores. Here the first process that needs a model starts a daemon,
``python -m rlm_kernel.models serve --daemon``, that runs a :class:`LlamaServer` in a process of its
own; the others (notebook kernels, eval workers) find it and queue on its slots.

Theory of operation:

- The daemon is known by its key (model file, ``n_ctx``, ``n_parallel``, ``n_threads``): it listens on
  the UNIX socket ``llama-<hash of the key>.sock`` in a private folder (:func:`private_dir`: mode 0700,
  owned by this user, else refused), next to its lock file and its log.
- A lease is a connection to that socket, held open for as long as the client process wants the
  server: on accepting it the daemon sends one JSON line (``base_url``, ``api_key``, ``model``,
  ``n_ctx``, ``n_parallel``, ``pid``) and then nothing; a client says nothing. Its process's death
  closes the connection, so leaving needs no goodbye. Bytes a client sends anyway are read and dropped.
- The daemon counts open leases; at none it arms a timer (``--idle-timeout``, 0: at once) and stops
  when it fires with still none, first removing its socket so that the next client starts another.
- Starting: a client that cannot connect takes the lock file, tries again, and otherwise binds the
  socket itself, connects its own lease to it and only then spawns the daemon with the listening socket
  (socket activation): no other client can start a second one meanwhile, the first lease is queued
  before the daemon exists, and every client waits on a condition, the first line, with a timeout. A
  daemon that fails closes the socket, so the waiting clients read end of file at once and are told
  where its log is.
- llama.cpp requires an API key the daemon makes at random, so that other users of the machine
  cannot use its TCP port; clients get it over the socket. The key is never logged.

A runtime (:class:`~rlm_kernel.runtime.Runtime`; the process's default one unless given) keeps one
lease per key, so ``make_lm("local")`` made many times costs one connection, and closing the runtime
lets its leases go.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import socket
import stat
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlm_kernel.errors import ConfigError, LocalServerError
from rlm_kernel.lm.llama_server import LOCAL_SLOTS
from rlm_kernel.runtime import Runtime, default_runtime

__all__ = [
    "MODE_VAR",
    "DIR_VAR",
    "IDLE_VAR",
    "DEFAULT_IDLE_TIMEOUT",
    "ServerKey",
    "Lease",
    "private_dir",
    "Leases",
    "lease",
    "leases_of",
    "close_leases",
]

MODE_VAR = "RLM_LOCAL_SERVER"  # "machine" (the default): the machine's server; "process": one in-process
DIR_VAR = "RLM_LOCAL_SERVER_DIR"  # the private folder, instead of $XDG_RUNTIME_DIR/rlm_kernel
IDLE_VAR = "RLM_LOCAL_SERVER_IDLE"  # seconds a daemon a client starts waits with no lease before it stops
DEFAULT_IDLE_TIMEOUT = 300.0
START_TIMEOUT = 120.0  # for the first line, which comes once the model is loaded
_PROTOCOL = 1
_MAX_HELLO = 64 * 1024
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path on Linux, less its terminating NUL


def _log(message: str) -> None:
    """One line on stderr: the terminal in the foreground, the log file for a daemon."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} rlm_kernel serve[{os.getpid()}]: {message}", file=sys.stderr)


# -- the key and the private folder -----------------------------------------------------------------


@dataclass(frozen=True)
class ServerKey:
    """What makes two requests for the local model the same server."""

    model_path: str  # resolved
    n_ctx: int
    n_parallel: int = LOCAL_SLOTS
    n_threads: int | None = None  # None: the physical cores

    @classmethod
    def of(
        cls,
        model_path: str | os.PathLike,
        *,
        n_ctx: int,
        n_parallel: int = LOCAL_SLOTS,
        n_threads: int | None = None,
    ) -> ServerKey:
        return cls(str(Path(model_path).expanduser().resolve()), int(n_ctx), int(n_parallel), n_threads)

    @property
    def digest(self) -> str:
        text = json.dumps([self.model_path, self.n_ctx, self.n_parallel, self.n_threads])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def paths(self, folder: Path) -> tuple[Path, Path, Path]:
        """The socket, lock file and log of this key's server in ``folder``."""
        stem = folder / f"llama-{self.digest}"
        return stem.with_suffix(".sock"), stem.with_suffix(".lock"), stem.with_suffix(".log")

    def serve_args(self) -> list[str]:
        """The options of ``python -m rlm_kernel.models serve`` that make this key."""
        args = ["--model-path", self.model_path, "--n-ctx", str(self.n_ctx)]
        args += ["--parallel", str(self.n_parallel)]
        return args + (["--threads", str(self.n_threads)] if self.n_threads is not None else [])


def private_dir() -> Path:
    """The folder of the servers' sockets, locks and logs: ``$RLM_LOCAL_SERVER_DIR``, else
    ``$XDG_RUNTIME_DIR/rlm_kernel``, else ``~/.cache/rlm_kernel/run``; created mode 0700.

    One that another user owns, that others may enter, or that is a symbolic link is refused:
    whoever can reach the socket gets the server's API key.
    """
    if os.environ.get(DIR_VAR):
        folder = Path(os.environ[DIR_VAR]).expanduser()
    elif os.environ.get("XDG_RUNTIME_DIR"):
        folder = Path(os.environ["XDG_RUNTIME_DIR"]) / "rlm_kernel"
    else:
        folder = Path.home() / ".cache" / "rlm_kernel" / "run"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:
        raise LocalServerError(
            f"Cannot create the local model server's folder {folder} ({exc.strerror}): "
            f"set {DIR_VAR} to a folder of yours."
        ) from None
    problem = None
    if not stat.S_ISDIR(st.st_mode):
        problem = "not a folder (a symbolic link?)"
    elif st.st_uid != os.getuid():
        problem = f"owned by uid {st.st_uid}, not you (uid {os.getuid()})"
    elif st.st_mode & 0o077:
        problem = f"open to others (mode {stat.S_IMODE(st.st_mode):o})"
    if problem:
        raise LocalServerError(
            f"The local model server's folder {folder} is {problem}: it must be yours alone; "
            f"run `chmod 700 {folder}`, or set {DIR_VAR} to another folder."
        )
    if len(os.fsencode(folder)) + len("/llama-0123456789abcdef.sock") > _SUN_PATH_MAX:
        raise LocalServerError(
            f"The local model server's folder {folder} is too long a path for a UNIX socket: "
            f"set {DIR_VAR} to a shorter one."
        )
    return folder


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``: one process at a time starts a given server."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _connect(path: Path) -> socket.socket | None:
    """A connection to a listening socket at ``path``; None when nothing listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except OSError:
        sock.close()
        raise
    return sock


def _bind(path: Path) -> socket.socket:
    """A socket listening at ``path``, mode 0600, put in place atomically over a stale one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.ExitStack() as undo:  # undone on any failure, Ctrl-C included, and re-raised
        undo.callback(_remove, tmp)
        undo.callback(listener.close)  # first: callbacks run last-in first-out
        listener.bind(str(tmp))
        os.chmod(tmp, 0o600)
        listener.listen(128)
        os.replace(tmp, path)
        undo.pop_all()
    return listener


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


# -- the client side: leases ----------------------------------------------------------------------


@dataclass(frozen=True)
class Lease:
    """A held connection to the machine's server for one key: while it is open the server stays."""

    base_url: str
    api_key: str
    model: str
    n_ctx: int
    n_parallel: int
    pid: int  # the daemon's
    log: Path
    sock: socket.socket

    def __repr__(self) -> str:  # without the key
        return f"<Lease {self.model} at {self.base_url} (pid {self.pid})>"

    @property
    def alive(self) -> bool:
        """The daemon still holds its end (it sends nothing after the first line: end of file is its end)."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def close(self) -> None:
        self.sock.close()


class Leases:
    """A runtime's leases, one per key; closing it (with the runtime) lets them go, and a server
    with none left stops after its idle timeout."""

    def __init__(self) -> None:
        self._held: dict[ServerKey, Lease] = {}
        self._lock = threading.Lock()
        _TABLES.add(self)

    def get(self, key: ServerKey, idle_timeout: float | None, timeout: float) -> Lease:
        with self._lock:
            held = self._held.get(key)
            if held is not None and held.alive:
                return held
            if held is not None:  # its server stopped (someone ended it): find or start another
                held.close()
            if not Path(key.model_path).is_file():
                raise ConfigError(
                    f"No model file at {key.model_path}: fetch it with `python -m rlm_kernel.models fetch`."
                )
            self._held[key] = held = _open_lease(key, _idle_timeout(idle_timeout), timeout)
            return held

    def __bool__(self) -> bool:
        return bool(self._held)

    def close(self) -> None:
        with self._lock:
            held = list(self._held.values())
            self._held.clear()
        for one in held:
            one.close()

    def _forget_in_child(self) -> None:
        """A forked child holds none of its parent's leases (they are the parent's to keep or close),
        and a lock the parent held while a model loaded is not held in the child."""
        self._lock = threading.Lock()
        for held in self._held.values():
            held.sock.close()  # the child's copy: the parent's lease stays open
        self._held.clear()


_TABLES: weakref.WeakSet[Leases] = weakref.WeakSet()


def _forget_leases_in_child() -> None:
    for table in list(_TABLES):
        table._forget_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_leases_in_child)

# What a daemon keeps of its starter's environment: not the provider keys a notebook's process holds.
_DAEMON_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR", DIR_VAR, "PYTHONPATH")
_DAEMON_ENV_PREFIXES = ("LLAMA_", "GGML_", "OMP_")


def lease(
    model_path: str | os.PathLike,
    *,
    n_ctx: int = 8192,
    n_parallel: int = LOCAL_SLOTS,
    n_threads: int | None = None,
    idle_timeout: float | None = None,
    timeout: float = START_TIMEOUT,
    runtime: Runtime | None = None,
) -> Lease:
    """``runtime``'s lease (the process's default runtime's if none is given) on the machine's
    server for the model and settings, started if need be; the runtime's close lets it go.

    ``idle_timeout`` (seconds; default ``$RLM_LOCAL_SERVER_IDLE`` or 300) applies only to a server
    this call starts. Raises :class:`LocalServerError` naming the server's log when it cannot start.
    """
    key = ServerKey.of(model_path, n_ctx=n_ctx, n_parallel=n_parallel, n_threads=n_threads)
    return leases_of(runtime or default_runtime()).get(key, idle_timeout, timeout)


def leases_of(runtime: Runtime) -> Leases:
    """The leases ``runtime`` holds, let go with it."""
    return runtime.own(Leases, Leases)


def close_leases() -> None:
    """Close the default runtime's leases (a server with none left stops after its idle timeout)."""
    leases_of(default_runtime()).close()


def _idle_timeout(given: float | None) -> float:
    if given is not None:
        return float(given)
    text = os.environ.get(IDLE_VAR, "").strip()
    if not text:
        return DEFAULT_IDLE_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ConfigError(f"{IDLE_VAR}={text!r}: set it to seconds, 0 or more (0: stop with the last user).")
    return value


def _open_lease(key: ServerKey, idle_timeout: float, timeout: float) -> Lease:
    folder = private_dir()
    sock_path, lock_path, log_path = key.paths(folder)
    for _ in range(3):  # a server found just as it stops on idle closes before its first line: again
        started = False
        sock = _connect(sock_path)
        if sock is None:
            with _locked(lock_path):
                sock = _connect(sock_path)  # another process may have started it meanwhile
                if sock is None:
                    sock = _spawn(key, sock_path, log_path, idle_timeout)
                    started = True
        hello = _read_hello(sock, timeout, log_path)
        if hello is not None:
            return Lease(
                base_url=hello["base_url"],
                api_key=hello["api_key"],
                model=hello["model"],
                n_ctx=hello["n_ctx"],
                n_parallel=hello["n_parallel"],
                pid=hello["pid"],
                log=log_path,
                sock=sock,
            )
        sock.close()
        if started:
            raise LocalServerError(
                f"The local model server for {Path(key.model_path).name} did not start"
                f"{_last_line(log_path)}; its log is {log_path}."
            )
    raise LocalServerError(
        f"The local model server for {Path(key.model_path).name} kept closing its socket {sock_path}; "
        f"see its log, {log_path}."
    )


def _spawn(key: ServerKey, sock_path: Path, log_path: Path, idle_timeout: float) -> socket.socket:
    """Bind the socket, queue our lease on it, then start the daemon that will serve it."""
    listener = _bind(sock_path)
    with contextlib.ExitStack() as undo:  # undone on any failure, Ctrl-C included, and re-raised
        undo.callback(_remove, sock_path)
        undo.callback(listener.close)  # first: callbacks run last-in first-out
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(sock_path))  # queued until the daemon accepts it, once the model is loaded
        # The last server's log. Appended to: a server still stopping writes after the new one's lines.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        log_fd = os.open(log_path, flags, 0o600)
        # rlm_kernel importable from the daemon's cwd too, wherever this process found it
        path = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
        env = {k: v for k, v in os.environ.items() if k in _DAEMON_ENV or k.startswith(_DAEMON_ENV_PREFIXES)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, path))
        cmd = [sys.executable, "-m", "rlm_kernel.models", "serve", *key.serve_args()]
        cmd += ["--idle-timeout", f"{idle_timeout:g}", "--daemon", "--listen-fd", str(listener.fileno())]
        cmd += ["--socket", str(sock_path)]
        try:
            proc = subprocess.Popen(
                cmd,
                pass_fds=(listener.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # no terminal's Ctrl-C or hang-up reaches it
                cwd=sock_path.parent,  # pins no folder of the user's
                env=env,
            )
        finally:
            os.close(log_fd)
        undo.pop_all()
    # Only the daemon holds the listening socket now: if it dies, the queued leases read end of file.
    listener.close()
    # Reap it when it ends, while this process lives (no zombie); after, its new parent does.
    threading.Thread(target=proc.wait, name=f"rlm-serve-{proc.pid}", daemon=True).start()
    return client


def _read_hello(sock: socket.socket, timeout: float, log_path: Path) -> dict[str, Any] | None:
    """The server's first line, checked; None at end of file (it stopped or failed to start)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\n" not in data and len(data) < _MAX_HELLO:
            chunk = sock.recv(4096)
            if not chunk:
                return None
            data += chunk
    except TimeoutError:
        sock.close()
        raise LocalServerError(
            f"The local model server did not answer within {timeout:g} s; see its log, {log_path}, "
            "or check the machine's load."
        ) from None
    except ConnectionResetError:
        return None
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(None)
    try:
        hello = json.loads(data.split(b"\n", 1)[0])
        fields = {"base_url": str, "api_key": str, "model": str, "n_ctx": int, "n_parallel": int, "pid": int}
        if not isinstance(hello, dict) or not all(isinstance(hello.get(k), t) for k, t in fields.items()):
            raise ValueError("missing fields")
    except ValueError:
        sock.close()
        raise LocalServerError(
            f"The local model server's socket sent no valid first line; see its log, {log_path}."
        ) from None
    return hello


def _last_line(log_path: Path) -> str:
    """The log's last line, the daemon's reason, as ``: <line>``; empty when there is none."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
            lines = [line.strip() for line in fh.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    if not lines:
        return ""
    reason = lines[-1].split("]: ", 1)[-1]
    return ": " + reason.removeprefix("error: ")
