"""rlm_kernel: Recursive Language Models in Jupyter.

The context stays a Python variable; a root LM writes code to inspect it and
calls sub-LMs on pieces. ``RLM(...).completion(context, root_prompt)`` runs one.
"""

from __future__ import annotations

from .errors import RLMError
from .rlm import RLM, RLMResult

__all__ = ["RLM", "RLMResult", "RLMError"]
__version__ = "0.1.0"
