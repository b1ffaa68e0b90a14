/**
 * What the extension does with each protocol message and kernel change, as pure functions:
 * where a cell goes, what it holds, when the comm opens. `notebook.ts` carries these out.
 */

import {
  KERNEL_NAME,
  MODES,
  isProposedMeta,
  type AnswerCellMeta,
  type HumanCellMeta,
  type Mode,
  type ProposeStepMsg,
  type RlmCellMeta,
  type RunFinishedMsg,
  type StepCellMeta
} from './protocol';
import { markdownText } from './safe';

/**
 * Whether a kernel speaks the protocol: the `rlm-python` kernelspec, or any kernelspec whose
 * metadata declares `rlm_kernel.protocol` (a copy installed under another name).
 */
export function isRlmKernel(name: string | null | undefined, specMetadata?: unknown): boolean {
  if (name === KERNEL_NAME) {
    return true;
  }
  if (typeof specMetadata !== 'object' || specMetadata === null) {
    return false;
  }
  const declared = (specMetadata as Record<string, unknown>).rlm_kernel;
  return typeof declared === 'object' && declared !== null && 'protocol' in declared;
}

export type CommAction = 'open' | 'drop' | 'none';

/**
 * Kernel states in which the kernel process (and so its comms) is gone or going. Not `unknown`:
 * that is a lost websocket, after which the same kernel, comms and all, comes back.
 */
const GONE = new Set(['restarting', 'autorestarting', 'dead', 'terminating']);
/** Kernel states in which a comm_open will be answered. */
const ALIVE = new Set(['idle', 'busy']);

/**
 * What to do with the panel's comm when its kernel's status changes. A restart keeps the kernel
 * connection but loses the kernel's comms: drop ours on `restarting`, open a new one once the
 * kernel is back (`idle`).
 */
export function commAction(hasComm: boolean, isRlm: boolean, status: string): CommAction {
  if (!isRlm || GONE.has(status)) {
    return hasComm ? 'drop' : 'none';
  }
  return !hasComm && ALIVE.has(status) ? 'open' : 'none';
}

/** Where a new cell goes: right after `afterCellId`, or at the end when that cell is gone. */
export function insertIndex(cellIds: readonly string[], afterCellId: string | null): number {
  const at = afterCellId === null ? -1 : cellIds.indexOf(afterCellId);
  return at === -1 ? cellIds.length : at + 1;
}

/**
 * Where a run's next cell (a proposed step, or its answer) goes: after `afterCellId`, the last
 * cell that ran, but never above a cell of the run already in the notebook (a human's cell run
 * above the run's steps does not pull the steps that follow it up there), so the run reads in the
 * order it ran. `moving` is a cell being placed again, left out of the count.
 */
export function placeIndex(
  cells: ReadonlyArray<{ id: string; meta: RlmCellMeta | null }>,
  afterCellId: string | null,
  runId: string,
  moving: string | null = null
): number {
  const at = insertIndex(
    cells.map(c => c.id),
    afterCellId
  );
  let last = -1;
  cells.forEach((c, i) => {
    if (c.id !== moving && c.meta !== null && !('answer' in c.meta) && c.meta.run_id === runId) {
      last = i;
    }
  });
  return Math.max(at, last + 1);
}

/** What Regenerate says when the root proposed the very code the step's cell holds already. */
export function sameProposalText(msg: ProposeStepMsg): string {
  const again = msg.can_regenerate ? ' Regenerate asks once more; or edit the cell, or run it.' : ' Edit the cell, or run it.';
  return `Regenerate: the root proposed the same code for step ${msg.step} again.${again}`;
}

/** After inserting a proposed step: run it (auto), or hand it to the human for review (step). */
export function onProposal(mode: Mode): 'run' | 'review' {
  return mode === 'auto' ? 'run' : 'review';
}

export function stepCellMeta(msg: ProposeStepMsg): StepCellMeta {
  return {
    run_id: msg.run_id,
    step: msg.step,
    author: 'root',
    proposed: msg.code,
    reply: msg.reply,
    ...(msg.mode === 'step' && msg.reason ? { reason: msg.reason } : {})
  };
}

/**
 * The cell that already holds this very proposal, by its metadata (the run, the step, the code the
 * root proposed): another view of the notebook may have inserted it. -1 when there is none.
 */
export function proposalIndex(metas: ReadonlyArray<RlmCellMeta | null>, msg: ProposeStepMsg): number {
  return metas.findIndex(
    m => isProposedMeta(m) && m.run_id === msg.run_id && m.step === msg.step && m.proposed === msg.code
  );
}

export function humanCellMeta(runId: string, step: number): HumanCellMeta {
  return { run_id: runId, step, author: 'human' };
}

/** Whether a cell a human step ran in may be marked so: a cell of the extension's keeps its own. */
export function takesHumanMeta(meta: RlmCellMeta | null): boolean {
  return meta === null || ('step' in meta && meta.author === 'human');
}

/**
 * The run a cell's metadata names, for the kernel before the cell runs: a cell of another run
 * (a finished one, run again by Run All) runs as an ordinary cell and never joins the active run.
 */
export function cellRunId(meta: RlmCellMeta | null): string | null {
  return meta === null || 'answer' in meta ? null : meta.run_id;
}

/** What the Mode button says of each rung of the permission ladder. */
export const MODE_TEXT: Record<Mode, string> = {
  auto: 'each proposed step runs at once',
  'confirm-risky': 'a proposed step waits for you when a scan flags it (imports of os, subprocess or the network, file writes, exec)',
  step: 'each proposed step waits for you to run it'
};

/** The permission ladder's next rung, for the toolbar's Mode button: auto, confirm-risky, step. */
export function nextMode(mode: Mode): Mode {
  return MODES[(MODES.indexOf(mode) + 1) % MODES.length];
}

/** A step's metadata once the human edited it before running: `proposed` keeps the root's code. */
export function editedMeta(meta: StepCellMeta): StepCellMeta {
  return { ...meta, author: 'human-edited' };
}

export interface CellSpec<M> {
  source: string;
  metadata: { rlm: M };
}

/**
 * The Markdown cell that closes a run: its answer, or why it ended without one. The answer is the
 * kernel's safe Markdown of it; without that (a kernel that sent none), and for the error and the
 * usage line, the text is escaped to render as itself (safe.ts).
 */
export function answerCell(msg: RunFinishedMsg): CellSpec<AnswerCellMeta> {
  const usage = msg.usage ? `\n\n<small>${markdownText(msg.usage)}</small>` : '';
  if (msg.answer !== null && msg.answer.trim() !== '') {
    const answer = msg.answer_markdown ?? markdownText(msg.answer);
    return {
      source: `**RLM answer**\n\n${answer}${usage}`,
      metadata: { rlm: { run_id: msg.run_id, answer: true } }
    };
  }
  const why = markdownText(msg.error ?? 'the run ended without an answer');
  return {
    source: `**RLM run ended without an answer:** ${why}${usage}`,
    metadata: { rlm: { run_id: msg.run_id, answer: true, error: true } }
  };
}

/**
 * What the toolbar offers for a panel: hidden unless RLM-connected; Pause and Stop enabled during a
 * run; the Mode button whenever connected (between runs it sets the next run's mode).
 */
export interface ToolbarState {
  visible: boolean;
  enabled: boolean;
  modeEnabled: boolean;
  mode: Mode;
  paused: boolean;
}

export function toolbarState(
  connected: boolean,
  active: { mode: Mode; paused: boolean; status: string } | null,
  nextRunMode: Mode = 'auto'
): ToolbarState {
  const running = active !== null && active.status === 'running';
  return {
    visible: connected,
    enabled: connected && running,
    modeEnabled: connected,
    mode: running && active !== null ? active.mode : nextRunMode,
    paused: running && active !== null ? active.paused : false
  };
}

/**
 * Read before write: whether a step's cell may take a new proposal (Regenerate) in place. Only
 * while it holds exactly what the root proposed; a cell the human edited keeps the edit.
 */
export function takesNewProposal(source: string, meta: RlmCellMeta | null): boolean {
  return isProposedMeta(meta) && meta.author === 'root' && source === meta.proposed;
}

/**
 * What a new proposal for a step whose cell exists (Regenerate) does to that cell:
 * - `replace`: the cell takes the new code now, as it runs at once (confirm-risky found nothing
 *   to flag), or it is the same code;
 * - `review`: the cell keeps its code and shows the new proposal as a diff, to accept or reject;
 * - `new-cell`: the human edited the cell, which is never written over; the proposal gets a cell
 *   of its own.
 * `reviewing` is the code the cell kept while a diff for the step shows (its metadata already
 * names the newer proposal), or null when none shows.
 */
export type Reproposal = 'replace' | 'review' | 'new-cell';

export function onReproposal(
  source: string,
  meta: RlmCellMeta | null,
  msg: ProposeStepMsg,
  reviewing: string | null
): Reproposal {
  const untouched =
    reviewing === null
      ? takesNewProposal(source, meta)
      : isProposedMeta(meta) && meta.author === 'root' && source === reviewing;
  if (!untouched) {
    return 'new-cell';
  }
  return onProposal(msg.mode) === 'run' || source === msg.code ? 'replace' : 'review';
}

// -- Undo a run ---------------------------------------------------------------------------------

/** A notebook cell as Undo sees it: its id and its `metadata.rlm`. */
export interface CellInfo {
  id: string;
  meta: RlmCellMeta | null;
  /** The cell's code, when known: a step that still holds the code kept by a Reject is not the
   * human's edit. */
  source?: string;
}

/** Whether Undo removes a cell of its run: the steps the root proposed (edited or not) and the
 * answer; never a cell the human ran during the run (a human step) or wrote. */
function insertedByRun(meta: RlmCellMeta | null): meta is RlmCellMeta {
  return meta !== null && ('answer' in meta || meta.author !== 'human');
}

/**
 * The run Undo acts on. `candidates` are the runs of the active cell, oldest first: the one its
 * metadata names, or those its `%%rlm` cell started. The latest of them that still has cells, else
 * the latest of them; with none, the latest run of the notebook (`runs`, oldest first, then the
 * cells' own order for runs the log does not know) that still has cells. Null: nothing to undo.
 */
export function undoRunId(
  candidates: readonly string[],
  runs: readonly string[],
  cells: readonly CellInfo[]
): string | null {
  const withCells = new Set(cells.flatMap(c => (insertedByRun(c.meta) ? [c.meta.run_id] : [])));
  const latest = (ids: readonly string[]): string | null => [...ids].reverse().find(id => withCells.has(id)) ?? null;
  if (candidates.length > 0) {
    return latest(candidates) ?? candidates[candidates.length - 1];
  }
  return latest(runs) ?? latest([...withCells]);
}

export interface UndoPlan {
  runId: string;
  /** The cells to remove, in notebook order. */
  cellIds: string[];
  steps: number;
  answers: number;
  /** Of the steps, those the human edited before running. */
  edited: number;
}

/** The cells a run inserted, by their metadata; `keep` (the run's `%%rlm` cell) is never one. */
export function undoPlan(runId: string, cells: readonly CellInfo[], keep: string | null = null): UndoPlan {
  const mine = cells.filter(c => c.id !== keep && insertedByRun(c.meta) && c.meta.run_id === runId);
  const steps = mine.filter(c => c.meta !== null && !('answer' in c.meta));
  return {
    runId,
    cellIds: mine.map(c => c.id),
    steps: steps.length,
    answers: mine.length - steps.length,
    edited: steps.filter(
      c =>
        isProposedMeta(c.meta) &&
        c.meta.author === 'human-edited' &&
        !(c.meta.kept !== undefined && c.source !== undefined && c.source.trim() === c.meta.kept.trim())
    ).length
  };
}

/** The cells Undo keeps that name its run: the human's steps, which lose the run's marks. */
export function undoKept(plan: UndoPlan, cells: readonly CellInfo[]): string[] {
  const gone = new Set(plan.cellIds);
  return cells.filter(c => !gone.has(c.id) && c.meta !== null && c.meta.run_id === plan.runId).map(c => c.id);
}

export interface UndoDialog {
  title: string;
  body: string;
  /** The label of the button that removes the cells; null: the dialog only informs. */
  accept: string | null;
}

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** What the confirmation says: how many cells go, that variables stay; or why nothing is done. */
export function undoDialog(plan: UndoPlan, running: boolean): UndoDialog {
  const title = 'Undo RLM run';
  if (running) {
    return {
      title,
      body: `Run ${plan.runId} is still going. Stop it first (Stop in the notebook toolbar), then undo it.`,
      accept: null
    };
  }
  const n = plan.cellIds.length;
  if (n === 0) {
    return { title, body: `Run ${plan.runId} has no cells left in this notebook.`, accept: null };
  }
  const parts = [
    plan.steps > 0 ? count(plan.steps, 'step cell', 'step cells') : '',
    plan.answers > 0 ? count(plan.answers, 'answer cell', 'answer cells') : ''
  ].filter(Boolean);
  const edited = plan.edited > 0 ? ` ${count(plan.edited, 'step was', 'steps were')} edited by you.` : '';
  return {
    title,
    body:
      `Remove the ${count(n, 'cell', 'cells')} run ${plan.runId} inserted (${parts.join(' and ')})?${edited} ` +
      'Your own cells and the %%rlm cell stay. Variables are not restored: what the run set in the kernel stays set.',
    accept: `Remove ${count(n, 'cell', 'cells')}`
  };
}
