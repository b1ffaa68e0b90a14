/**
 * What the extension does with each protocol message and kernel change, as pure functions:
 * where a cell goes, what it holds, when the comm opens. `notebook.ts` carries these out.
 */

import {
  KERNEL_NAME,
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
  const ladder: Mode[] = ['auto', 'confirm-risky', 'step'];
  return ladder[(ladder.indexOf(mode) + 1) % ladder.length];
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
