"""``python -m rlm_kernel.acp``: an RLM as an Agent Client Protocol agent on stdin and stdout.

Its settings are RLMConfig's, as everywhere: a flag for each (``--model-name``, ``--max-iterations``,
...), else the environment (``RLM_BACKEND``, ``RLM_MODEL``, ``RLM_SUB_MODEL``, the providers' keys
and ``*_BASE_URL``); with no backend named, the provider whose key is set, else the bundled model,
said in one line on stderr. stdout carries the protocol alone; everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Mapping

from ..config import RUN_SETTINGS, RLMConfig, add_arguments, setting_env
from ..errors import RLMError
from ..lm import keyed_backend, no_key_notice
from ..risk import LADDER

__all__ = ["main", "settings"]

# Settings a command line cannot give: functions and types live in Python, not in text.
SKIPPED = ("tools", "sub_tools", "output_type")


def settings(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> tuple[RLMConfig, str | None]:
    """The agent's RLMConfig from its flags, then the environment; and the line to say when no key
    and no backend were found (the bundled model then answers), else None."""
    values = {}
    for name in RUN_SETTINGS:
        value = getattr(args, name, None)
        env = setting_env(name)
        if value is None and env:
            value = environ.get(env) or None
        if value is not None:
            values[name] = value
    notice = None
    if "backend" not in values:
        found = keyed_backend(environ)
        values["backend"] = found.name if found else "local"
        if found is None:
            notice = no_key_notice(values.get("model_name"))
    return RLMConfig(**values), notice


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rlm_kernel.acp",
        description="An RLM as an Agent Client Protocol agent over stdio (Zed, Jupyter AI, ...).",
    )
    parser.add_argument(
        "--mode",
        choices=LADDER,
        default="confirm-risky",
        help="a new session's permission mode: auto runs every step; confirm-risky asks before the "
        "steps the risk scan flags; step asks before each (default: confirm-risky)",
    )
    parser.add_argument(
        "--sessions-dir",
        default=None,
        help="where sessions are saved for session/load (default: acp-sessions in the trajectories' "
        "folder, --log-dir or $RLM_LOG_DIR or ~/.rlm_kernel/runs)",
    )
    add_arguments(parser, skip=SKIPPED)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        from .agent import RLMAgent
        from .stdio import serve
    except ModuleNotFoundError as exc:
        if exc.name != "acp":
            raise
        print(
            "python -m rlm_kernel.acp needs the Agent Client Protocol SDK: pip install 'rlm-kernel[acp]'",
            file=sys.stderr,
        )
        return 2
    from ..rlm import RLM
    from ..runtime import default_runtime

    try:
        config, notice = settings(args)
        RLM.from_config(config)  # a missing key or a bad setting: one line now, not at the first prompt
    except RLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if notice:
        print(notice, file=sys.stderr, flush=True)
    agent = RLMAgent(config, mode=args.mode, notice=notice, sessions_dir=args.sessions_dir)
    # An editor ends its agents with SIGTERM: the sessions' kernels and servers go with this process.
    default_runtime().close_on_sigterm()
    try:
        asyncio.run(serve(agent))
    except KeyboardInterrupt:
        return 130
    finally:
        agent.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
