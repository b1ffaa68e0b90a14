"""The ``bench`` role: one figure of ``benchmarks/results.json`` in running text.

``{bench}`executors: cold start of a sandboxed kernel``` gives "0.72 s": the benchmark's name, a
colon, and the figure's name as ``benchmarks/run_all.py`` recorded it.

The ``bench-json`` role: one value of another result file in ``benchmarks/``, by its path of keys
and list indexes: ``{bench-json}`labelling.json slots.1.classify.of_limit``` gives "1.083".
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results.json"


@cache
def figures() -> dict[tuple[str, str], tuple[Any, str]]:
    out = {}
    for bench in json.loads(RESULTS.read_text())["benchmarks"]:
        for item in bench.get("figures", []):
            if not {"figure", "value", "unit"} <= set(item):
                continue
            out[bench["name"], item["figure"]] = (item["value"], item["unit"])
    return out


def bench_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    bench, _, figure = (part.strip() for part in text.partition(":"))
    found = figures().get((bench, figure))
    if found is None:
        message = inliner.reporter.error(f"bench: no figure {figure!r} of {bench!r} in {RESULTS.name}")
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    value, unit = found
    return [nodes.Text(f"{value} {unit}")], []


def bench_json_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    file, _, path = text.strip().partition(" ")
    try:
        value: Any = json.loads((RESULTS.parent / file).read_text())
        for key in path.strip().split("."):
            value = value[int(key)] if isinstance(value, list) else value[key]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        message = inliner.reporter.error(f"bench-json: no {path!r} in benchmarks/{file} ({exc!r})")
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    whole = isinstance(value, int) and not isinstance(value, bool)
    return [nodes.Text(f"{value:,}" if whole else str(value))], []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_role("bench", bench_role)
    app.add_role("bench-json", bench_json_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
