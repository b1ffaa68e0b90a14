"""The "RLM Python" kernel: IPython with the magics loaded and notebook mode wired in.

Run with ``python -m rlm_kernel.jupyter.kernel -f CONNECTION_FILE`` (the kernelspec does it).
"""

from __future__ import annotations

from typing import Any

from ipykernel.ipkernel import IPythonKernel

from ..version import __version__
from .active import ActiveRun
from .notebook import NotebookMode

__all__ = ["RLMKernel", "main"]


class RLMKernel(IPythonKernel):
    implementation = "rlm_kernel"
    implementation_version = __version__
    banner = "RLM Python: IPython with Recursive Language Models (%rlm, %%rlm)"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shell.extension_manager.load_extension("rlm_kernel")
        magics = self.shell.magics_manager.registry["RLMMagics"]
        # The kernel's one run in progress, shared by the magics and notebook mode.
        self.runs = magics.runs = ActiveRun()
        self.notebook = magics.notebook = NotebookMode(self, magics, self.runs)

    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict | None = None,
        cell_id: str | None = None,
        **kwargs: Any,
    ) -> dict:
        async def run_cell() -> dict:
            return await super(RLMKernel, self).do_execute(
                code,
                silent,
                store_history,
                user_expressions,
                allow_stdin,
                cell_meta=cell_meta,
                cell_id=cell_id,
                **kwargs,
            )

        if silent:
            return await run_cell()
        return await self.notebook.execute(run_cell, code, cell_id, (cell_meta or {}).get("rlm"))


def main() -> None:
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=RLMKernel)


if __name__ == "__main__":
    main()
