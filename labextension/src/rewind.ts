/**
 * Rewind from the runs panel: "Continue from here" on a root step of a finished run writes a new
 * `%%rlm` cell, the run's own magic line plus `--continue-from RUN:STEP`, below the run's last
 * cell, and runs it. The kernel does the rest (`rlm_kernel/rewind.py`): the steps before that one
 * replay, and the root proposes it again. The cell is the branch's record, as readable as any.
 */

/** Where a branch may start: a root step (edited or not) that ran, of a run that has ended. */
export function canContinueFrom(
  run: { status: string; steps: ReadonlyArray<{ step: number; author: string; status: string }> },
  step: number,
  otherRunActive: boolean
): boolean {
  const found = run.steps.find(s => s.step === step);
  // A step the run stopped before it ran has no turn of its own to ask again.
  const ran = found !== undefined && (found.status === 'done' || found.status === 'error');
  return !otherRunActive && run.status !== 'running' && ran && found.author !== 'human';
}

const CONTINUE = /\s--continue-from(?:=|\s+)\S+/g;

/**
 * The branch's `%%rlm` cell: the original cell's magic line (its context, model and other
 * options) with `--continue-from RUN:STEP` in place of any it had, and its question.
 */
export function continueSource(original: string, runId: string, step: number): string | null {
  const newline = original.indexOf('\n');
  const line = newline === -1 ? original : original.slice(0, newline);
  if (!/^%%rlm(\s|$)/.test(line)) {
    return null;
  }
  const body = newline === -1 ? '' : original.slice(newline + 1);
  return `${line.replace(CONTINUE, '').trimEnd()} --continue-from ${runId}:${step}\n${body}`;
}
