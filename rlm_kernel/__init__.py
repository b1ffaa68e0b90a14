"""rlm_kernel: Recursive Language Models in Jupyter.

The context stays a Python variable; a root LM writes code to inspect it and
calls sub-LMs on pieces. ``RLM(...).completion(context, root_prompt)`` runs one.
"""

from __future__ import annotations

from .errors import RLMError
from .reference import RLMLogger
from .rlm import RLM, RLMResult
from .version import __version__ as __version__

__all__ = ["RLM", "RLMResult", "RLMError", "RLMLogger", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(shell: object) -> None:
    """``%load_ext rlm_kernel``: the ``%rlm`` / ``%%rlm`` magics."""
    from .jupyter import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: object) -> None:
    """``%unload_ext rlm_kernel``: remove the magics cleanly."""
    from .jupyter import unload_ipython_extension as unload

    unload(shell)
