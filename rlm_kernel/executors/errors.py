"""The kernel executor's errors, apart from the modules that raise them, so that each imports them
without importing another.

::

    RLMError
     └── KernelError        a kernel could not start, died, or stopped answering
          ├── KernelStuck   a step that did not end when interrupted
          └── NotSandboxed  a kernel that should be in a sandbox of its own is not

A kernel that breaks the bridge's protocol is :class:`.bridge.ProtocolError`, declared with the
protocol it breaks.
"""

from __future__ import annotations

from ..errors import RLMError

__all__ = ["KernelError", "KernelStuck", "NotSandboxed"]


class KernelError(RLMError):
    """A kernel could not start, died, or stopped answering."""


class KernelStuck(KernelError):
    """A step that did not end when interrupted."""


class NotSandboxed(KernelError):
    """A kernel that should be in a sandbox of its own is not (``why``)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"the kernel is not sandboxed: {why}")
        self.why = why
