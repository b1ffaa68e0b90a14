"""The built JupyterLab extension is committed, so that a clone installs it with no Node.js: it
must be the build of the sources beside it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _hatch_build():
    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "labextension" / "hatch_build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_extension_is_built_from_the_sources_beside_it() -> None:
    build = _hatch_build()
    out = ROOT / "rlm_kernel" / "labextension"
    assert (out / "package.json").is_file() and list((out / "static").glob("remoteEntry.*.js"))
    stamp = (out / build.STAMP).read_text().strip()
    assert stamp == build.sources_digest(ROOT / "labextension"), (
        "rlm_kernel/labextension is not the build of labextension/: run `python labextension/hatch_build.py` "
        "and commit rlm_kernel/labextension"
    )


def test_the_digest_changes_with_any_source(tmp_path: Path) -> None:
    build = _hatch_build()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.ts").write_text("export {};\n")
    (tmp_path / "package.json").write_text("{}\n")
    before = build.sources_digest(tmp_path)
    (tmp_path / "src" / "index.ts").write_text("export { };\n")
    assert build.sources_digest(tmp_path) != before
    (tmp_path / "src" / "index.ts").write_text("export {};\n")
    assert build.sources_digest(tmp_path) == before
    (tmp_path / "src" / "__tests__").mkdir()  # tests are not what the build reads
    (tmp_path / "src" / "__tests__" / "a.spec.ts").write_text("test;\n")
    assert build.sources_digest(tmp_path) == before


def test_the_build_environment_gets_jupyterlab_only_for_a_build_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = _hatch_build()
    assert not build._to_build(ROOT / build.OUT, ROOT / build.PACKAGE)  # a clone: the committed build
    package, out = tmp_path / "labextension", tmp_path / "out"
    (package / "src").mkdir(parents=True)
    (package / "src" / "index.ts").write_text("export {};\n")
    (out / "static").mkdir(parents=True)
    (out / "package.json").write_text("{}\n")
    (out / "static" / "remoteEntry.abc.js").write_text("\n")
    (out / build.STAMP).write_text(build.sources_digest(package) + "\n")
    monkeypatch.setattr(build, "_node_version", lambda: (22, 12))
    assert not build._to_build(out, package)
    (package / "src" / "index.ts").write_text("export const changed = 1;\n")
    assert build._to_build(out, package)
    monkeypatch.setenv("HATCH_JUPYTER_BUILDER_SKIP_NPM", "1")
    assert not build._to_build(out, package)
    monkeypatch.delenv("HATCH_JUPYTER_BUILDER_SKIP_NPM")
    monkeypatch.setattr(build, "_node_version", lambda: (20, 11))  # too old to build with
    assert not build._to_build(out, package)
