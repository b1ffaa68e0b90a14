"""The Jupyter layer: magics and live views. It imports the engine; the engine never imports it."""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension", "unload_ipython_extension"]

_HIDDEN = "__rlm_magics__"


def load_ipython_extension(shell: Any) -> None:
    from .magics import RLMMagics, await_rlm_magics

    if _HIDDEN in shell.user_ns:  # loaded already
        return
    magics = RLMMagics(shell=shell)
    shell.register_magics(magics)
    shell.configurables.append(magics)
    shell.push({_HIDDEN: magics}, interactive=False)
    shell.input_transformers_cleanup.append(await_rlm_magics)


def unload_ipython_extension(shell: Any) -> None:
    from .magics import RLMMagics, await_rlm_magics

    magics = shell.user_ns.pop(_HIDDEN, None)
    shell.user_ns_hidden.pop(_HIDDEN, None)
    for session in getattr(magics, "sessions", {}).values():  # their kernels, with a kernel executor
        session.close()
    for kind in ("line", "cell"):
        shell.magics_manager.magics[kind].pop("rlm", None)
    shell.magics_manager.registry.pop(RLMMagics.__name__, None)
    if magics in shell.configurables:
        shell.configurables.remove(magics)
    if await_rlm_magics in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(await_rlm_magics)
