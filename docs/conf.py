"""Sphinx configuration of the rlm_kernel documentation: ``sphinx-build -W --keep-going -b html docs
docs/_build/html`` builds it, warnings as errors."""

from __future__ import annotations

import sys
from pathlib import Path

from sphinx.application import Sphinx

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))

project = "rlm_kernel"
author = "rlm_kernel contributors"
copyright = "2026, rlm_kernel contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "options_table",
    "eval_tables",
    "bench_figures",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "screenshots.py", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
smartquotes = False  # code-like text in prose (dicts, quotes in options) stays as written

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "rlm_kernel"


def _drop_generated_docstrings(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """A dataclass without a docstring gets its signature as one ("RunStarted(*, run_id: ...)"):
    not prose, and not reStructuredText. Show the class without it; its fields are in the signature."""
    short = name.rsplit(".", 1)[-1]
    if what == "class" and lines and lines[0].startswith(f"{short}("):
        lines.clear()


def setup(app: Sphinx) -> None:
    app.connect("autodoc-process-docstring", _drop_generated_docstrings)
