"""``python -m rlm_kernel.eval``: generate the paper's long-context tasks, run methods side by side,
score them, resume, and plot.

    python -m rlm_kernel.eval list
    python -m rlm_kernel.eval run --tasks sniah,oolong,pairs --lengths 8k,32k,128k,1m \\
        --methods rlm,base --model-name qwen2.5-coder-0.5b --split test -n 10 --out results/
    python -m rlm_kernel.eval run --methods base,summary,codeact,codeact+subcalls,rlm,rlm-no-subcalls \\
        --tasks oolong --lengths 32k --out results/
    python -m rlm_kernel.eval run --methods rlm,rlm+tips --tips-file tips.md --out results/
    python -m rlm_kernel.eval show results/
    python -m rlm_kernel.eval table results/          # the paper's Table 1: methods by tasks
    python -m rlm_kernel.eval plot results/

Run the same ``run`` command again to resume: finished rollouts are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ..config import RUN_SETTINGS, add_arguments, executor_kwargs_of
from ..errors import ConfigError, RLMError
from ..runtime import default_runtime
from .methods import _TAKES_TIPS, DEFAULTS, METHODS, TIPS, Settings, _listed, split_method
from .results import load
from .tasks import DESCRIPTIONS, SPLITS, family_names

_DEFAULT_WINDOW = {"local": 8192}
# The methods that run on the RLM engine, in an executor (a sandboxed kernel by default).
_ON_ENGINE = ("rlm", "rlm-no-subcalls", "codeact", "codeact+subcalls")


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rlm_kernel.eval", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the task families and methods")

    r = sub.add_parser("run", help="run a sweep (resumes one already in --out)")
    r.add_argument(
        "--tasks",
        type=_list,
        help="families, comma-separated (see: list); default sniah, or none when --task-file is given",
    )
    r.add_argument("--lengths", type=_list, default=["8k"], help="context lengths in tokens: 8k,32k,128k,1m")
    r.add_argument(
        "--methods",
        type=_list,
        default=["rlm", "base"],
        help=f"from {', '.join(METHODS)}; {_listed([m + TIPS for m in _TAKES_TIPS])} run with the tips",
    )
    r.add_argument("--split", choices=SPLITS, default="test")
    r.add_argument("-n", type=int, default=5, help="tasks per family and length")
    r.add_argument("--task-file", action="append", default=[], help="your own tasks (JSONL); repeatable")
    r.add_argument("--out", default="results", help="the results folder")
    # The run settings of the RLM methods, one flag each (--model-name, --max-iterations, ...).
    # And the kernel executor's settings (--isolation, --memory-mb, ...).
    add_arguments(
        r, defaults=DEFAULTS, skip=("log_dir", "record"), functions="MODULE:ATTR", executor_settings=True
    )
    r.add_argument("--base-url", help="an OpenAI- or Anthropic-compatible server")
    r.add_argument("--base-max-tokens", type=int, default=2048, help="the longest answer of the base method")
    r.add_argument("--tips-file", help="the tips, from a file (instead of --tips)")
    r.add_argument("--runner", choices=["local", "ray"], default="local")
    r.add_argument("--concurrency", type=int, default=2, help="rollouts at once (local runner)")
    r.add_argument("--workers", type=int, default=2, help="Ray actors")
    r.add_argument("--rollouts-per-worker", type=int, default=2)
    r.add_argument("--ray-address", help="a Ray cluster; default: a local one")
    r.add_argument("--plot", action="store_true", help="also draw the plots into --out")
    r.add_argument("--no-progress", action="store_true")

    s = sub.add_parser("show", help="the summary table of a results folder")
    s.add_argument("results")
    t = sub.add_parser("table", help="the paper's Table 1 of a results folder: methods by tasks")
    t.add_argument("results")
    t.add_argument(
        "--format",
        choices=["markdown", "plain"],
        default="markdown",
        help="a Markdown table (default), or columns aligned with spaces",
    )
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


def _preflight(settings: Settings, methods: list[str]) -> None:
    """What the sweep needs, before its progress bar: each provider's key, bubblewrap for the kernels'
    sandbox, and the bundled model, fetched now under a bar of its own (its disk checked first)."""
    from .. import models
    from ..executors.sandbox import NONE_HINT
    from ..lm import backend, make_lm
    from ..rlm import RLM

    if any(split_method(m)[0] in _ON_ENGINE for m in methods):
        try:
            RLM.from_config(settings.rlm)  # the root's and the sub-calls' keys; the executor's sandbox
        except ConfigError as exc:
            hint = "or pass --isolation none to run the kernels without one"
            raise ConfigError(str(exc).replace(NONE_HINT, hint)) from None
    else:
        name, kwargs, model = settings.rlm.lm_kwargs("root")
        if backend(name).needs_key:
            make_lm(name, kwargs, model=model)  # MissingAPIKey, in one line, when there is none
    for model_name in models.bundled_models(settings.rlm):
        models.fetch(model_name)


def _run(args: argparse.Namespace) -> int:
    from .plots import plot
    from .sweep import arun

    given = {name: getattr(args, name) for name in RUN_SETTINGS if getattr(args, name, None) is not None}
    if args.tips_file:
        if "tips" in given:
            raise ConfigError("Give the tips once: --tips or --tips-file.")
        try:
            given["tips"] = Path(args.tips_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read the tips file {args.tips_file!r}: {exc.strerror}.") from None
    if args.base_url:
        given["backend_kwargs"] = {"base_url": args.base_url}
    if given.get("executor", DEFAULTS.executor) != "local":
        given["executor_kwargs"] = {"isolation": "sandbox", **executor_kwargs_of(args)}
    elif executor_kwargs_of(args):  # a one-line error: the local executor takes none
        given["executor_kwargs"] = executor_kwargs_of(args)
    settings = Settings(base_max_tokens=args.base_max_tokens, **given)
    # Your own tasks alone, unless families are asked for too.
    families = args.tasks if args.tasks is not None else [] if args.task_file else ["sniah"]
    _preflight(settings, args.methods)
    coro = arun(
        families,
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
        for path in plot(results, args.out, window=_DEFAULT_WINDOW.get(settings.rlm.backend)):
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
            default_runtime().close_on_sigterm()  # a sweep stopped by SIGTERM leaves no kernel behind
            return _run(args)
        results = load(args.results)
        if not len(results):
            print(f"error: no results in {args.results}", file=sys.stderr)
            return 1
        if args.command == "show":
            print(results.table())
            return 0
        if args.command == "table":
            print(results.paper_table(args.format))
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
