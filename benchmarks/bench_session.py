"""A session's second question against a fresh run of the same question, in a kernel of its own.

The context (``--mb`` MB of words; 40 by default, 8 with ``--quick``) goes to a sandboxed kernel
(``executor="kernel"``; without bubblewrap, ``isolation: none``). The LM is the scripted server,
in this process, playing a root that answers in one step:

- question 1 splits the context into ``words`` and answers with their count;
- question 2, "which word comes first?", is asked twice: in the session, where ``words`` is still
  in the REPL (``print(words[0])``), and as a fresh run, which starts a kernel, loads the context and
  splits it again.

Each pair is run ``--repeats`` times (3; 2 with ``--quick``). Reported: the median wall time of each,
their ratio, the input tokens each sent (the session's conversation is longer: it carries question
1's turn), and how many times the context was loaded into a kernel (``KernelExecutor._load``,
counted). Targets: the session's second question loads the context no second time, and takes
less time than the fresh run.

    python benchmarks/bench_session.py [--quick] [--json benchmarks/session.json]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import main, median, target, timed

FIRST, SECOND = "How many words are there?", "Which word comes first?"
NEXT = "A new question about the same context"


def repl(*lines: str) -> str:
    return "```repl\n" + "\n".join(lines) + "\n```"


def respond(request):  # the scripted root; sub-calls are not made
    if NEXT in request.last_user:  # the session's second question: `words` is there
        return repl("print(words[0])", "answer['content'] = words[0]", "answer['ready'] = True")
    if SECOND in request.last_user:  # a fresh run of it
        return repl(
            "words = context.split()",
            "print(words[0])",
            "answer['content'] = words[0]",
            "answer['ready'] = True",
        )
    return repl(
        "words = context.split()",
        "print(len(words))",
        "answer['content'] = str(len(words))",
        "answer['ready'] = True",
    )


def run(quick: bool) -> dict:
    from scripted_server import ScriptedServer

    from rlm_kernel import RLM
    from rlm_kernel.executors.kernel import KernelExecutor

    mb, repeats = (8, 2) if quick else (40, 3)
    words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    context = " ".join(words[i % len(words)] for i in range(mb * 1_000_000 // 6))
    loads = {"n": 0}
    original = KernelExecutor._load

    def counted(self, value):  # the measurement: how often a context goes to a kernel
        loads["n"] += 1
        return original(self, value)

    KernelExecutor._load = counted  # type: ignore[method-assign]
    isolation = {} if shutil.which("bwrap") else {"isolation": "none"}
    figures = []
    with ScriptedServer(respond) as server, tempfile.TemporaryDirectory() as logs:
        kwargs = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": "sk-bench"}
        rlm = RLM("openai", kwargs, executor="kernel", executor_kwargs=isolation, log_dir=logs)
        for _ in range(repeats):
            with rlm.session(context) as session:
                first = session.ask(FIRST)
                before = loads["n"]
                session_s, second = timed(lambda s=session: s.ask(SECOND))
                session_loads = loads["n"] - before
            before = loads["n"]
            fresh_s, fresh = timed(lambda: rlm.completion(context, SECOND))
            fresh_loads = loads["n"] - before
            assert first.ok and second.ok and fresh.ok, (first.error, second.error, fresh.error)
            assert second.response == fresh.response == "alpha"
            figures.append(
                {
                    "session_s": round(session_s, 3),
                    "fresh_s": round(fresh_s, 3),
                    "session_loads": session_loads,
                    "fresh_loads": fresh_loads,
                    "session_input_tokens": second.usage.total.input_tokens,
                    "fresh_input_tokens": fresh.usage.total.input_tokens,
                }
            )
    KernelExecutor._load = original  # type: ignore[method-assign]
    session_s = median([f["session_s"] for f in figures])
    fresh_s = median([f["fresh_s"] for f in figures])
    ratio = round(session_s / fresh_s, 3)
    return {
        "name": "session",
        "context_mb": mb,
        "isolation": isolation.get("isolation", "bubblewrap"),
        "figures": figures,
        "summary": {
            "session_s_median": session_s,
            "fresh_s_median": fresh_s,
            "time_ratio": ratio,
            "token_ratio": round(
                median([f["session_input_tokens"] for f in figures])
                / median([f["fresh_input_tokens"] for f in figures]),
                3,
            ),
        },
        "targets": [
            target(
                "context loads for the session's second question", max(f["session_loads"] for f in figures), 0
            ),
            target("session's second question / fresh run, wall time", ratio, 1.0),
        ],
        "notes": [
            "the scripted server counts a request's tokens from its characters; the session's second "
            "question sends the first question's turn again (its conversation): more input tokens",
        ],
    }


if __name__ == "__main__":
    main("session", run)
