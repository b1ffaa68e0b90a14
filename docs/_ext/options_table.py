"""The ``rlm-options`` directive: the table of ``RLM``'s settings, made from ``RLMConfig`` itself;
``rlm-executor-options``: the table of the executors' settings (``executor_kwargs``), made from
``ExecutorSettings`` the same way.

Each row is a field of :class:`rlm_kernel.config.RLMConfig`: its name, its default, the magics'
option for the settings every front end offers (``RUN_SETTINGS``), and its help text. A field's
``env`` and ``alias`` metadata (the environment variable the magics read, an older name) are shown
when the field declares them; a ``kind`` of ``dict`` has no option on a command line.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

INTERNAL = {"depth"}  # set by the run tree, never given


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "(required)"
    return f"`{value!r}`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def rows() -> list[tuple[str, str, str, str]]:
    """(name, default, magic option, help) of each field a user may set."""
    from rlm_kernel import config

    offered = set(getattr(config, "RUN_SETTINGS", ()))
    out = []
    for f in dataclasses.fields(config.RLMConfig):
        if f.name in INTERNAL or f.name.startswith("_"):
            continue
        meta: Any = f.metadata or {}
        help_text = meta.get("help")
        if help_text is None and f.name in offered:
            help_text = config.setting_help(f.name)
        notes = []
        if meta.get("env"):
            notes.append(f"default from `${meta['env']}` in the magics")
        if meta.get("alias"):
            notes.append(f"older name `{meta['alias']}`")
        text = _cell(help_text or "")
        if notes:
            text = f"{text} ({', '.join(notes)})" if text else ", ".join(notes)
        flag = "--" + f.name.replace("_", "-")
        if f.name not in offered:
            option = ""
        elif meta.get("kind") == "dict":  # no command-line form: %config RLMMagics.<name> = {...}
            option = "(`%config` only)"
        elif isinstance(f.default, bool):
            option = f"`{flag}` / `--no-{flag[2:]}`"
        else:
            option = f"`{flag}`"
        out.append((f"`{f.name}`", _cell(_default(f)), option, text))
    return out


def executor_rows() -> list[tuple[str, str, str, str]]:
    """(name, default, the executors that take it, help) of each executor setting."""
    from rlm_kernel.executors import settings

    return [
        (
            f"`{f.name}`",
            _cell(_default(f)),
            ", ".join(f"`{name}`" for name in f.metadata["executors"]),
            _cell(f.metadata["help"]),
        )
        for f in dataclasses.fields(settings.ExecutorSettings)
        if f.name in settings.SETTINGS
    ]


class OptionsTable(SphinxDirective):
    has_content = False
    header = "| setting | default | `%%rlm` option | what |"
    source = "rlm_kernel.config"

    def rows(self) -> list[tuple[str, str, str, str]]:
        return rows()

    def run(self) -> list[nodes.Node]:
        lines = [self.header, "|---|---|---|---|"]
        lines += [f"| {' | '.join(row)} |" for row in self.rows()]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.source), self.content_offset, container)
        return container.children


class ExecutorOptionsTable(OptionsTable):
    header = "| `executor_kwargs` key | default | executors | what |"
    source = "rlm_kernel.executors.settings"

    def rows(self) -> list[tuple[str, str, str, str]]:
        return executor_rows()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("rlm-options", OptionsTable)
    app.add_directive("rlm-executor-options", ExecutorOptionsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
