"""The evaluation sweeps whose figures the README publishes, each a plain ``rlm_kernel.eval`` run.

    python benchmarks/eval_sweeps.py --list
    python benchmarks/eval_sweeps.py baseline-0.5b      # results, CSV, plots in benchmarks/eval/<name>/

A sweep's folder keeps ``results.jsonl``, ``results.csv``, ``sweeps.jsonl`` (its settings),
``figure1.png``, ``cost_vs_score.png``, ``tokens.png`` and ``SUMMARY.md`` (the table, the sweep's
wall time and the machine). Trajectories stay out of git (``benchmarks/eval/*/trajectories``).
Running a sweep again resumes it; delete its folder to measure it afresh.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "eval"

# name -> (what it measures, the arguments of `python -m rlm_kernel.eval run`)
SWEEPS: dict[str, tuple[str, list[str]]] = {
    "baseline-0.5b": (
        "The bundled 0.5B model, RLM against the plain model, test split, before any tuning on dev",
        ["--tasks", "sniah", "--lengths", "8k,32k,128k", "-n", "5", "--methods", "rlm,base"],
    ),
    "sniah-0.5b": (
        "S-NIAH, every haystack shape and kind of needle, with the bundled 0.5B model",
        ["--tasks", "sniah", "--lengths", "4k,8k,32k,128k", "-n", "10", "--methods", "rlm,base"],
    ),
    "sniah-1m-0.5b": (
        "S-NIAH at 2^20 tokens (about 4 million characters) with the bundled 0.5B model",
        ["--tasks", "sniah", "--lengths", "1m", "-n", "10", "--methods", "rlm,base"],
    ),
    "records-0.5b": (
        "Counting and filtering over 200 to 10,000 records with the bundled 0.5B model",
        ["--tasks", "records", "--lengths", "4k,8k,32k,128k", "-n", "10", "--methods", "rlm,base"],
    ),
    "records-1.5b": (
        "Counting and filtering over records with the bundled 1.5B model",
        ["--tasks", "records", "--lengths", "8k,32k,128k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small"],
    ),
    "oolong-1.5b": (
        "OOLONG trec_coarse with the bundled 1.5B model as root and sub-model",
        ["--tasks", "oolong", "--lengths", "4k", "-n", "6", "--methods", "rlm,base", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "3000",
         "--base-max-tokens", "256"],
    ),
    "oolong-32k-1.5b": (
        "OOLONG trec_coarse at 32K tokens with the bundled 1.5B model as root and sub-model",
        ["--tasks", "oolong", "--lengths", "32k", "-n", "2", "--methods", "rlm,base", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "1500",
         "--base-max-tokens", "256"],
    ),
    "pairs-1.5b": (
        "OOLONG-Pairs with the bundled 1.5B model as root and sub-model",
        ["--tasks", "pairs", "--lengths", "4k", "-n", "2", "--methods", "rlm,base", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "3000"],
    ),
    "regress-0.5b": (
        "S-NIAH and records (the families the small profile was first developed on) after the BM25 "
        "search and the new worked examples, test split, with the bundled 0.5B model",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small"],
    ),
    "heldout-0.5b": (
        "Documents, a repository, DataFrames and chained facts, test split, with the bundled 0.5B model "
        "as root and sub-model (the small profile was developed on frames and chain, dev split; "
        "documents and repo were held out)",
        ["--tasks", "documents,repo,frames,chain", "--lengths", "64k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600"],
    ),
    "heldout-0.5b-verify": (
        "heldout-0.5b again with verify=True: the sub-model judges each committed answer, and one it "
        "doubts goes back to the root once (how often the unsupported warning marks a wrong answer)",
        ["--tasks", "documents,repo,frames,chain", "--lengths", "64k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--verify"],
    ),
    "meaning-0.5b": (
        "Counting 300 notes by a topic the data does not show, test split, with the bundled 0.5B model",
        ["--tasks", "meaning", "--lengths", "30k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "1200"],
    ),
    "meaning-1.5b": (
        "Counting 300 notes by a topic the data does not show, test split, with the bundled 1.5B model "
        "as root and sub-model",
        ["--tasks", "meaning", "--lengths", "30k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "2400"],
    ),
    "final-0.5b": (
        "heldout-0.5b with the code as shipped: after the meaning runs, classify() says what labels it "
        "takes, a traceback supports no answer, an empty answer goes back once, and no reply's start "
        "ends in a space",
        ["--tasks", "documents,repo,frames,chain", "--lengths", "64k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600"],
    ),
    "meaning-0.5b-final": (
        "meaning-0.5b with the code as shipped (see final-0.5b)",
        ["--tasks", "meaning", "--lengths", "30k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "1200"],
    ),
    "meaning-1.5b-final": (
        "meaning with the bundled 1.5B as root and sub-model and the code as shipped (see final-0.5b)",
        ["--tasks", "meaning", "--lengths", "30k", "-n", "3", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "2400"],
    ),
    "heldout-1.5b": (
        "Documents, a repository, DataFrames and chained facts, test split, with the bundled 1.5B "
        "model as root and sub-model",
        ["--tasks", "documents,repo,frames,chain", "--lengths", "64k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600"],
    ),
    "pairs-4k-compaction-1.5b": (
        "OOLONG-Pairs at 4K with the bundled 1.5B model as root and sub-model, with root-history "
        "compaction (on by default for its 8K window); pairs-1.5b is the same sweep before it",
        ["--tasks", "pairs", "--lengths", "4k", "-n", "2", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "1500"],
    ),
    "oolong-4k-baselines-1.5b": (
        "OOLONG trec_coarse at 4K with the bundled 1.5B model: CodeAct, CodeAct with sub-calls and the "
        "summary agent, on the first three tasks of oolong-1.5b (which has the RLM and the plain model)",
        ["--tasks", "oolong", "--lengths", "4k", "-n", "3", "--methods", "codeact,codeact+subcalls,summary",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1",
         "--max-timeout", "1500", "--base-max-tokens", "256"],
    ),
    "pairs-4k-baselines-1.5b": (
        "OOLONG-Pairs at 4K with the bundled 1.5B model: CodeAct, CodeAct with sub-calls and the summary "
        "agent, on the two tasks of pairs-1.5b (which has the RLM and the plain model)",
        ["--tasks", "pairs", "--lengths", "4k", "-n", "2", "--methods", "codeact,codeact+subcalls,summary",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--concurrency", "1",
         "--max-timeout", "1500"],
    ),
    "oolong-32k-baselines-1.5b": (
        "OOLONG trec_coarse at 32K tokens with the bundled 1.5B model: the RLM, the plain model, "
        "CodeAct and the summary agent",
        ["--tasks", "oolong", "--lengths", "32k", "-n", "1", "--methods",
         "base,codeact,codeact+subcalls,summary,rlm", "--model-name", "qwen2.5-coder-1.5b",
         "--prompt-profile", "small", "--concurrency", "1", "--max-timeout", "1500",
         "--base-max-tokens", "256"],
    ),
    "holdout-0.5b-votes": (
        "Logs, workbooks, message threads and config files, test split, with the bundled 0.5B model and "
        "its default of three roots that vote: families held out from the small profile's development "
        "(see holdout-2026-12/README.md), measured once after it",
        ["--tasks", "logs,workbook,threads,configs", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600"],
    ),
    "holdout-0.5b-one-root": (
        "holdout-0.5b-votes with one root (votes=1): what the vote costs and gains",
        ["--tasks", "logs,workbook,threads,configs", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-1.5b-one-root": (
        "holdout-0.5b-one-root with the bundled 1.5B model as root and sub-model: the default model's choice",
        ["--tasks", "logs,workbook,threads,configs", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "regress-2-0.5b": (
        "regress-0.5b again after the second redesign of the small profile (a failed step's lines begin "
        "the next reply, counting over lines in code, frames loaded by name, nothing found is sent back)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "dev-2-0.5b-one-root": (
        "holdout-0.5b-one-root after the second redesign, which was developed on the dev split of these "
        "four families: what it changed on them",
        ["--tasks", "logs,workbook,threads,configs", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-2-0.5b-one-root": (
        "Four kinds of data held out from the second redesign of the small profile (see "
        "holdout-2026-12b/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "mlruns,notebook,references,statement", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-2-1.5b-one-root": (
        "holdout-2-0.5b-one-root with the bundled 1.5B model as root and sub-model: the default model's "
        "choice",
        ["--tasks", "mlruns,notebook,references,statement", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-3-0.5b-one-root": (
        "Four kinds of data held out from the third change of the small profile (see "
        "holdout-2026-12c/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "calendars,testreport,transit,places", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "regress-3-0.5b": (
        "regress-0.5b again after the third change of the small profile (nested records, CSV exports, "
        "answers from the printed variable, values the question names)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "holdout-4-0.5b-one-root": (
        "Four kinds of data held out from the fourth change of the small profile (see "
        "holdout-2026-12d/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "mailbox,gitlog,sqldump,lockfile", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-4-1.5b-one-root": (
        "holdout-4-0.5b-one-root with the bundled 1.5B model as root and sub-model: the default model's "
        "choice",
        ["--tasks", "mailbox,gitlog,sqldump,lockfile", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-5-0.5b-one-root": (
        "Four kinds of data held out from the fifth change of the small profile (see "
        "holdout-2026-12e/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "invoices,fixtures,subtitles,tracker", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "regress-4-0.5b": (
        "regress-0.5b again after the fourth change of the small profile (records keyed by id, item "
        "tables with their record's fields, load lines last, loops of lines stopped, names the question "
        "gives held to)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "holdout-6-0.5b-one-root": (
        "Four kinds of data held out from the sixth change of the small profile (see "
        "holdout-2026-12f/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "elections,recipes,genealogy,labs", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-6-1.5b-one-root": (
        "holdout-6-0.5b-one-root with the bundled 1.5B model as root and sub-model, the first three tasks "
        "of each family (for time): the default model's choice",
        ["--tasks", "elections,recipes,genealogy,labs", "--lengths", "8k", "-n", "3", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "regress-5-0.5b": (
        "regress-0.5b again after the sixth change of the small profile (records of text and files as "
        "rows, the no-match hint, a 0 for a name)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "regress-6-0.5b": (
        "regress-0.5b again after the seventh change of the small profile (the questions of rows worded "
        "most like the root's, the filter hint and its mend)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "regress-7-0.5b": (
        "regress-6-0.5b again after its records miss: the questions of rows shown are the five of "
        "before, and one more only where the question shares two or more words of substance with it",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "holdout-7-0.5b-one-root": (
        "Four kinds of data held out from the seventh change of the small profile (see "
        "holdout-2026-12g/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "chess,contacts,ledger,weather", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-7-1.5b-one-root": (
        "holdout-7-0.5b-one-root with the bundled 1.5B model as root and sub-model, the first three tasks "
        "of each family (for time): the default model's choice",
        ["--tasks", "chess,contacts,ledger,weather", "--lengths", "8k", "-n", "3", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-8-0.5b-one-root": (
        "Four kinds of data held out from the eighth change of the small profile (see "
        "holdout-2026-12h/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "birding,listening,metrics,parcels", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-8-0.5b-before": (
        "holdout-8-0.5b-one-root with the code before the eighth change (75e3897: no rewound turn, the "
        "worked examples of nested records with an item table whatever the data), run from a checkout of "
        "that commit in the same session: what the change did on data neither version was made on",
        ["--tasks", "birding,listening,metrics,parcels", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "regress-8-0.5b": (
        "regress-7-0.5b again after the eighth change (a loop of the step that just failed rewinds its "
        "turn; nested records without lists of records get worked examples of their own)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "holdout-9-0.5b-one-root": (
        "Four kinds of data held out from the ninth change of the small profile (see "
        "holdout-2026-12i/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "telescope,cluster,survey,dns", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-9-1.5b-one-root": (
        "holdout-9-0.5b-one-root with the bundled 1.5B model as root and sub-model, the first three tasks "
        "of each family (for time): the default model's choice",
        ["--tasks", "telescope,cluster,survey,dns", "--lengths", "8k", "-n", "3", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-9-0.5b-before": (
        "holdout-9-0.5b-one-root with the code before the ninth change (254bef7: the filter hint without "
        "dates, words or datetimes, no unit or whole-collection check), run from a checkout of that commit "
        "in the same session: what the change did on data neither version was made on",
        ["--tasks", "telescope,cluster,survey,dns", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "regress-9-0.5b": (
        "regress-8-0.5b again after the ninth change (a fuller hint on a filter that matched nothing; sums "
        "in another unit and whole collections are doubted)",
        ["--tasks", "sniah,records", "--lengths", "8k,32k", "-n", "10", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--votes", "1"],
    ),
    "dev-10-cluster": (
        "Development of the tenth change (a text table of aligned columns loads with pd.read_fwf) on the "
        "ninth set's cluster family, whose test split is kubectl's wide table: the 0.5B, one root; "
        "compare the cluster rows of holdout-9-0.5b-one-root",
        ["--tasks", "cluster", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1"],
    ),
    "dev-10-cluster-1.5b": (
        "dev-10-cluster with the bundled 1.5B model, the first three tasks; compare the cluster rows of "
        "holdout-9-1.5b-one-root",
        ["--tasks", "cluster", "--lengths", "8k", "-n", "3", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1"],
    ),
    "holdout-10-0.5b-one-root": (
        "Four kinds of data held out from the tenth change of the small profile (see "
        "holdout-2026-12j/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "crashes,variants,gradebook,manifest", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-10-0.5b-before": (
        "holdout-10-0.5b-one-root with the code before the tenth change (89a00a4: no text table read with "
        "read_fwf), run from a checkout of that commit in the same session",
        ["--tasks", "crashes,variants,gradebook,manifest", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "dev-11-gradebook-variants": (
        "Development of the eleventh change (CSV whose quoted fields hold commas and whose missing numbers "
        "are dashes; a value asked for as a column is told which column holds it; a word in capitals the "
        "code never used, a rule taken out after) on the tenth set's gradebook and variants families: the "
        "0.5B, one root; compare their rows of holdout-10-0.5b-one-root",
        ["--tasks", "gradebook,variants", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1"],
    ),
    "dev-11-manifest": (
        "Development of the eleventh change's report reader (a printed report's rows, with the section "
        "fields of the title lines above them, as one DataFrame) on the tenth set's manifest family, whose "
        "test split is a terminal's paged discharge lists: the 0.5B, one root; compare the manifest rows of "
        "holdout-10-0.5b-one-root",
        ["--tasks", "manifest", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1"],
    ),
    "holdout-11-0.5b-one-root": (
        "Four kinds of data held out from the eleventh change of the small profile (see "
        "holdout-2026-12k/README.md), test split, with the bundled 0.5B model and one root: measured once "
        "after it",
        ["--tasks", "payroll,admissions,library,wiki", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "holdout-11-0.5b-before": (
        "holdout-11-0.5b-one-root with the code before the eleventh change (12fd6be: quoted CSV fields, "
        "dashes for no value and printed reports not read; no hint for a value asked for as a column; "
        "neither new rule), run from a checkout of that commit in the same session",
        ["--tasks", "payroll,admissions,library,wiki", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1"],
    ),
    "dev-11-wiki": (
        "After holdout-11-0.5b-one-root, JSON Lines text read as records (a change tried and not kept), on "
        "the burned wiki family (its test split is a wiki's edit stream as JSON Lines): the 0.5B, one root; "
        "compare the wiki rows of holdout-11-0.5b-one-root",
        ["--tasks", "wiki", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1"],
    ),
    "dev-12-0.5b": (
        "The twelfth change (the worked examples' made-up data described once, not before each of their "
        "questions; measured, not kept) on four burned families it was developed on, the 0.5B, one root, "
        "one rollout at a time; compare their rows of holdout-11-0.5b-one-root, dev-11-gradebook-variants "
        "and dev-11-manifest",
        ["--tasks", "admissions,library,gradebook,manifest", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "holdout-12-0.5b-one-root": (
        "Four kinds of data held out from the twelfth change of the small profile (see "
        "holdout-2026-12l/README.md), test split, with the bundled 0.5B model, one root, one rollout at a "
        "time: measured once after it (982d574; the change was not kept)",
        ["--tasks", "fitness,cloudcost,trades,rides", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "holdout-12-0.5b-before": (
        "holdout-12-0.5b-one-root with the code before the twelfth change (c0675f4: each worked "
        "example's question after the made-up data's whole description), run from a checkout of that commit "
        "in the same session",
        ["--tasks", "fitness,cloudcost,trades,rides", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "holdout-12-1.5b-one-root": (
        "holdout-12-0.5b-one-root with the bundled 1.5B model",
        ["--tasks", "fitness,cloudcost,trades,rides", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-1.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "dev-12-rules-0.5b": (
        "The code as kept after the twelfth set (the worked examples as at c0675f4, and two rules of the "
        "cheap check written after its measurement: names in camel case the data shows, decimal numbers "
        "end to end) on that burned set: a development figure, and a second run of holdout-12-0.5b-before's "
        "prompts",
        ["--tasks", "fitness,cloudcost,trades,rides", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "dev-13-xml-0.5b": (
        "The thirteenth change (XML text loaded with xmltodict and its records as tables, lists of records "
        "beside the records as tables of their own) on the three XML splits it was developed on (dev "
        "splits of testreport, tracker and wiki), the 0.5B, one root, one rollout at a time",
        ["--tasks", "testreport,tracker,wiki", "--split", "dev", "--lengths", "8k", "-n", "6", "--methods",
         "rlm", "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "dev-13-xml-0.5b-before": (
        "dev-13-xml-0.5b with the code before the thirteenth change (dcf6760: XML described as text), run "
        "from a checkout of that commit in the same session",
        ["--tasks", "testreport,tracker,wiki", "--split", "dev", "--lengths", "8k", "-n", "6", "--methods",
         "rlm", "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
    "dev-13-dates-0.5b": (
        "Worked examples that compare a month of datetimes as its text, and a day's (0fd19b8; measured, "
        "not kept), on the burned rides family (a DataFrame of taxi trips, test split), whose questions "
        "of trips on one day the 0.5B answered by comparing datetimes with a day's text; compare its rows "
        "of holdout-12-0.5b-before and dev-12-rules-0.5b",
        ["--tasks", "rides", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1",
         "--concurrency", "1"],
    ),
    "xml-13-0.5b": (
        "The thirteenth change on the two XML splits held out from its development (test splits of places, "
        "a KML file, and fitness, a health app's export.xml: families of earlier rounds, whose XML was not "
        "read while the change was made), the 0.5B, one root, one rollout at a time",
        ["--tasks", "places,fitness", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1",
         "--concurrency", "1"],
    ),
    "xml-13-0.5b-before": (
        "xml-13-0.5b with the code before the thirteenth change (dcf6760), run from a checkout of that "
        "commit in the same session",
        ["--tasks", "places,fitness", "--lengths", "8k", "-n", "6", "--methods", "rlm", "--model-name",
         "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600", "--votes", "1",
         "--concurrency", "1"],
    ),
    "holdout-13-0.5b-before": (
        "Four kinds of data held out from the thirteenth change of the small profile (see "
        "holdout-2026-12m/README.md), test split, with the bundled 0.5B model, one root, one rollout at a "
        "time, measured once, from a checkout of 93feaf2 (before the change) in the same session: the "
        "change alters nothing its 24 tasks show the model (their context's metadata and description and "
        "the worked examples hash the same at 93feaf2 and after the change), so this is the set's figure "
        "for the code as kept too",
        ["--tasks", "inspections,reviews,flights,adverse", "--lengths", "8k", "-n", "6", "--methods", "rlm",
         "--model-name", "qwen2.5-coder-0.5b", "--prompt-profile", "small", "--max-timeout", "600",
         "--votes", "1", "--concurrency", "1"],
    ),
}  # fmt: skip


def run(name: str) -> int:
    what, args = SWEEPS[name]
    out = OUT / name
    started = time.perf_counter()
    args = args if "--split" in args else [*args, "--split", "test"]  # the test split unless named
    cmd = [sys.executable, "-m", "rlm_kernel.eval", "run", *args, "--out", str(out), "--plot"]
    proc = subprocess.run(cmd, text=True, capture_output=True)
    wall = time.perf_counter() - started
    print(proc.stdout)
    if proc.returncode != 0:
        print(proc.stderr[-4000:], file=sys.stderr)
        return proc.returncode
    table = proc.stdout.split("\n\nResults:")[0].strip()
    command = "python -m rlm_kernel.eval run " + " ".join(args)
    (out / "SUMMARY.md").write_text(
        f"# {name}\n\n{what}.\n\n```bash\n{command}\n```\n\n{table}\n\n"
        f"Wall time of this invocation: {wall / 60:.1f} min on {platform.machine()}, "
        f"{_cpus()} CPU(s), Python {platform.python_version()}.\n"
    )
    return 0


def _cpus() -> str:
    try:
        return subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="the sweeps to run (default: all)")
    p.add_argument("--list", action="store_true")
    args = p.parse_args()
    if args.list:
        for name, (what, a) in SWEEPS.items():
            print(f"{name}: {what}\n    python -m rlm_kernel.eval run {' '.join(a)}")
        return 0
    status = 0
    for name in args.names or list(SWEEPS):
        status = run(name) or status
    return status


if __name__ == "__main__":
    raise SystemExit(main())
