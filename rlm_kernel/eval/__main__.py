"""``python -m rlm_kernel.eval``: generate the paper's long-context tasks, run methods side by side,
score them, resume, and plot.

    python -m rlm_kernel.eval list
    python -m rlm_kernel.eval run --tasks sniah,oolong,pairs --lengths 8k,32k,128k,1m \\
        --methods rlm,base --model qwen2.5-coder-0.5b --split test -n 10 --out results/
    python -m rlm_kernel.eval run --methods rlm,rlm+tips --tips-file tips.md --out results/
    python -m rlm_kernel.eval show results/
    python -m rlm_kernel.eval plot results/

Run the same ``run`` command again to resume: finished rollouts are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ..errors import ConfigError, RLMError
from .methods import _TAKES_TIPS, METHODS, TIPS, Settings
from .results import load
from .tasks import DESCRIPTIONS, SPLITS, family_names

_DEFAULT_WINDOW = {"local": 8192}


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rlm_kernel.eval", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the task families and methods")

    r = sub.add_parser("run", help="run a sweep (resumes one already in --out)")
    r.add_argument("--tasks", type=_list, default=["sniah"], help="families, comma-separated (see: list)")
    r.add_argument("--lengths", type=_list, default=["8k"], help="context lengths in tokens: 8k,32k,128k,1m")
    r.add_argument(
        "--methods",
        type=_list,
        default=["rlm", "base"],
        help=f"from {', '.join(METHODS)}; {' and '.join(m + TIPS for m in _TAKES_TIPS)} run with the tips",
    )
    r.add_argument("--split", choices=SPLITS, default="test")
    r.add_argument("-n", type=int, default=5, help="tasks per family and length")
    r.add_argument("--task-file", action="append", default=[], help="your own tasks (JSONL); repeatable")
    r.add_argument("--out", default="results", help="the results folder")
    r.add_argument("--backend", default="local", choices=["local", "openai", "anthropic"])
    r.add_argument("--model", help="root model (local: qwen2.5-coder-0.5b or qwen2.5-coder-1.5b)")
    r.add_argument("--sub-backend", choices=["local", "openai", "anthropic"])
    r.add_argument("--sub-model")
    r.add_argument("--base-url", help="an OpenAI- or Anthropic-compatible server")
    r.add_argument("--profile", choices=["default", "small", "no_subcalls"])
    r.add_argument("--max-iterations", type=int, default=12)
    r.add_argument("--max-depth", type=int, default=1)
    r.add_argument("--timeout", type=float, default=900, help="seconds for one rollout")
    r.add_argument("--base-max-tokens", type=int, default=2048, help="the longest answer of the base method")
    r.add_argument(
        "--executor",
        choices=["kernel", "local", "gateway"],
        default="kernel",
        help="where RLM code runs: a kernel of its own (default), this process, or JUPYTER_GATEWAY_URL's",
    )
    r.add_argument(
        "--isolation",
        choices=["sandbox", "none"],
        default="sandbox",
        help="a kernel's sandbox (default), or none where no sandbox can be made (bubblewrap missing)",
    )
    tips = r.add_mutually_exclusive_group()
    tips.add_argument("--tips", help="text appended to the root's prompt by the methods named with +tips")
    tips.add_argument("--tips-file", help="the tips, from a file")
    r.add_argument("--tools", metavar="MODULE:ATTR", help="a dict or list of functions for the root's code")
    r.add_argument("--sub-tools", metavar="MODULE:ATTR", help="a dict or list of functions for sub-calls")
    r.add_argument("--max-tool-rounds", type=int, default=8, help="tool-calling rounds of one sub-call")
    r.add_argument(
        "--verify",
        action="store_true",
        help="the sub-model checks each committed answer against what the code printed (RLM(verify=True)); "
        "rollouts are keyed without it, so give such a sweep an --out of its own",
    )
    r.add_argument("--runner", choices=["local", "ray"], default="local")
    r.add_argument("--concurrency", type=int, default=2, help="rollouts at once (local runner)")
    r.add_argument("--workers", type=int, default=2, help="Ray actors")
    r.add_argument("--rollouts-per-worker", type=int, default=2)
    r.add_argument("--ray-address", help="a Ray cluster; default: a local one")
    r.add_argument("--plot", action="store_true", help="also draw the plots into --out")
    r.add_argument("--no-progress", action="store_true")

    s = sub.add_parser("show", help="the summary table of a results folder")
    s.add_argument("results")
    pl = sub.add_parser("plot", help="draw the plots of a results folder")
    pl.add_argument("results")
    pl.add_argument("--out", help="where the PNG files go (default: the results folder)")
    pl.add_argument("--window", type=int, help="the model's window in tokens, marked on the plot")
    return p


def _runner(args: argparse.Namespace):
    from .runners import LocalRunner, RayRunner

    if args.runner == "ray":
        return RayRunner(args.ray_address, workers=args.workers, rollouts_per_worker=args.rollouts_per_worker)
    return LocalRunner(args.concurrency)


def _run(args: argparse.Namespace) -> int:
    from .plots import plot
    from .sweep import arun

    kwargs = {"base_url": args.base_url} if args.base_url else {}
    tips = args.tips
    if args.tips_file:
        try:
            tips = Path(args.tips_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read the tips file {args.tips_file!r}: {exc.strerror}.") from None
    settings = Settings(
        backend=args.backend,
        model=args.model,
        sub_backend=args.sub_backend,
        sub_model=args.sub_model,
        backend_kwargs=kwargs,
        profile=args.profile,
        max_iterations=args.max_iterations,
        max_depth=args.max_depth,
        timeout=args.timeout,
        base_max_tokens=args.base_max_tokens,
        executor=args.executor,
        executor_kwargs={"isolation": args.isolation} if args.executor != "local" else {},
        tips=tips,
        tools=args.tools,
        sub_tools=args.sub_tools,
        max_tool_rounds=args.max_tool_rounds,
        verify=args.verify,
    )
    coro = arun(
        args.tasks,
        args.lengths,
        args.methods,
        split=args.split,
        n=args.n,
        out=args.out,
        settings=settings,
        task_files=args.task_file,
        runner=_runner(args),
        progress=not args.no_progress,
    )
    try:
        results = asyncio.run(coro)
    except KeyboardInterrupt:
        done = len(load(args.out))
        print(
            f"\nInterrupted. {done} rollout(s) are kept in {args.out}; run the same command again to resume.",
            file=sys.stderr,
        )
        return 130
    print(results.table())
    print(f"\nResults: {Path(args.out) / 'results.jsonl'} and results.csv")
    if args.plot:
        for path in plot(results, args.out, window=_DEFAULT_WINDOW.get(args.backend)):
            print(f"Plot: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for name in family_names():
                print(f"{name:10} {DESCRIPTIONS[name]}")
            print("\nmethods: " + ", ".join(METHODS))
            print(f"with --tips: {', '.join(m + TIPS for m in _TAKES_TIPS)} (the same method, with the tips)")
            return 0
        if args.command == "run":
            return _run(args)
        results = load(args.results)
        if not len(results):
            print(f"error: no results in {args.results}", file=sys.stderr)
            return 1
        if args.command == "show":
            print(results.table())
            return 0
        from .plots import plot

        for path in plot(results, args.out or args.results, window=args.window):
            print(path)
        return 0
    except RLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
