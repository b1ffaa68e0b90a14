"""One end-to-end RLM run, for ``bench_reference.py``; run by either package's python.

    python _e2e_run.py --package rlm|rlm_kernel --base-url URL --fanout 64 [--max-concurrency N]

Prints one JSON line: import time, each run's time (construction plus ``completion``; the
first run pays the lazy imports) and the responses. Only the standard library is used
besides the package under test.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", choices=["rlm", "rlm_kernel"], required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--fanout", type=int, default=64)
    parser.add_argument("--max-concurrency", type=int, default=None)
    parser.add_argument("--runs", type=int, default=2, help="the first is cold (lazy imports), the rest warm")
    args = parser.parse_args()

    started = time.perf_counter()
    if args.package == "rlm":
        from rlm import RLM
    else:
        from rlm_kernel import RLM
    imported = time.perf_counter()

    backend_kwargs = {"model_name": "scripted", "base_url": args.base_url, "api_key": "test"}
    runs, responses = [], []
    with tempfile.TemporaryDirectory() as log_dir:
        for _ in range(args.runs):
            run_start = time.perf_counter()
            if args.package == "rlm":
                rlm = RLM(backend="openai", backend_kwargs=backend_kwargs)
            else:
                extra = {} if args.max_concurrency is None else {"max_concurrency": args.max_concurrency}
                rlm = RLM(backend="openai", backend_kwargs=backend_kwargs, log_dir=log_dir, **extra)
            result = rlm.completion("a small context", root_prompt=f"FANOUT={args.fanout}")
            runs.append(time.perf_counter() - run_start)
            responses.append(result.response)
    print(
        json.dumps(
            {"package": args.package, "import_s": imported - started, "runs_s": runs, "responses": responses}
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
