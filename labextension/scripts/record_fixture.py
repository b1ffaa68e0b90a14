"""Record what a real RLM Python kernel sends the front end during one run, for the jest tests.

    python labextension/scripts/record_fixture.py   # from the repository root, in the dev venv

Plays the extension's part with tests/frontend.py against the scripted LM server: a root step
with batched sub-calls (one failing), a step the human edits, a human cell of its own, then the
answer. Writes labextension/src/__tests__/fixtures/kernel_run.json (the comm messages in order).
Re-record when the protocol or the event shapes change.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from frontend import FrontEnd  # noqa: E402
from kernel_session import KernelSession  # noqa: E402
from scripted_server import Reply, Request, Script, ScriptedServer  # noqa: E402

OUT = ROOT / "labextension" / "src" / "__tests__" / "fixtures" / "kernel_run.json"


BATCH = "parts = llm_query_batched(['a: ' + context[:5], 'b: ' + context[5:10], 'fail'])\nprint(parts)"


def repl(code: str) -> str:
    return f"Next step.\n```repl\n{code}\n```"


def sub(request: Request) -> Reply:
    if "fail" in request.last_user:
        return Reply(status=400, error_message="scripted failure")
    return Reply(text=f"summary of {request.last_user[:20]}", input_tokens=120, output_tokens=8, delay=0.05)


def main() -> None:
    script = Script(
        root=[
            Reply(
                text=repl(BATCH),
                input_tokens=900,
                output_tokens=40,
            ),
            Reply(text=repl("n = len(context)\nprint(n)"), input_tokens=1100, output_tokens=30),
            Reply(text=repl("FINAL(n)"), input_tokens=1300, output_tokens=10),
        ],
        sub=sub,
    )
    edited = "n = len(context) * 2\nprint(n)"

    def on_propose(data: dict) -> str | None:
        return edited if data["step"] == 2 else data["code"]

    with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as logs:
        env = {
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": "sk-test",
            "RLM_MODEL": "gpt-4o-mini",
            "RLM_LOG_DIR": logs,
        }
        with KernelSession("rlm-python", env) as kernel:
            assert kernel.execute("doc = 'abcdefghij' * 4")["status"] == "ok"
            front = FrontEnd(kernel, on_propose=on_propose)
            front.run_cell("%%rlm -c doc\nHow long is it?", "rlm-cell")
            front.accept(front.next("propose_step"))  # step 1, as proposed
            proposal = front.next("propose_step")  # step 2: held, a human cell first, then edited
            front.on_propose = lambda data: None
            front.accept(proposal)
            front.run_cell("mine = doc[:3]\nprint(mine)", "human-cell")
            front.run_cell(edited, front.cells[2])
            front.on_propose = on_propose
            finished = front.drive()
            assert finished["answer"] is not None, finished
            messages = front.received()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(messages, indent=1) + "\n", encoding="utf-8")
    where = OUT.relative_to(ROOT)
    print(f"{len(messages)} messages -> {where}; answer {finished['answer']!r}; {finished['usage']}")


if __name__ == "__main__":
    main()
