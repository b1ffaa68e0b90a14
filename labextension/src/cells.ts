/**
 * How RLM cells look: a class on the cell node (left border), a badge "RLM step N" (with
 * "edited", "human", "not run" or why it waited, when so) whose tooltip sums the step's tokens,
 * latency and cost. Everything is derived from the cell's `metadata.rlm`, so a saved notebook
 * looks the same when reopened.
 */

import type { Cell } from '@jupyterlab/cells';

import { readCellMeta, type HumanCellMeta, type StepCellMeta } from './protocol';
import { stepTooltip } from './format';
import type { RunLog, StepAuthor, StepView } from './runs';

export const CLASS = {
  step: 'rlm-step-cell',
  edited: 'rlm-step-human-edited',
  human: 'rlm-step-human',
  answer: 'rlm-answer-cell',
  answerError: 'rlm-answer-error',
  badge: 'rlm-badge'
} as const;

const ALL = [CLASS.step, CLASS.edited, CLASS.human, CLASS.answer, CLASS.answerError];

/**
 * Where the badge goes: the input area (its bottom-right corner stays clear of the cell toolbar),
 * or the cell itself while the cell is still a windowing placeholder.
 */
function badgeHost(cell: Cell): HTMLElement {
  return cell.inputArea?.node ?? cell.node;
}

function findBadge(cell: Cell): HTMLElement | null {
  return cell.node.querySelector<HTMLElement>(`.${CLASS.badge}`);
}

const AUTHOR_NOTE: Record<StepAuthor, string> = { root: '', 'human-edited': 'edited', human: 'human' };

export function decorateCell(cell: Cell, log: RunLog): void {
  if (cell.isDisposed) {
    return;
  }
  const meta = readCellMeta(cell.model.getMetadata('rlm'));
  const node = cell.node;
  let badge = findBadge(cell);
  if (meta === null) {
    ALL.forEach(c => cell.removeClass(c));
    badge?.remove();
    delete node.dataset.rlmRun;
    delete node.dataset.rlmStep;
    delete node.dataset.rlmStatus;
    return;
  }
  node.dataset.rlmRun = meta.run_id;
  const host = badgeHost(cell);
  if (badge?.parentElement !== host) {
    badge?.remove();
    badge = document.createElement('div');
    badge.className = CLASS.badge;
    host.appendChild(badge);
    if (host === node) {
      // Move it into the input area once the cell is rendered.
      void cell.ready.then(() => decorateCell(cell, log));
    }
  }
  if ('answer' in meta) {
    cell.addClass(CLASS.answer);
    cell.toggleClass(CLASS.answerError, meta.error === true);
    [CLASS.step, CLASS.edited, CLASS.human].forEach(c => cell.removeClass(c));
    delete node.dataset.rlmStep;
    delete node.dataset.rlmStatus;
    const usage = log.get(meta.run_id)?.usage;
    badge.textContent = meta.error ? 'RLM ended' : 'RLM answer';
    badge.title = `Run ${meta.run_id}${usage ? `\n${usage}` : ''}`;
    return;
  }
  cell.addClass(CLASS.step);
  cell.toggleClass(CLASS.edited, meta.author === 'human-edited');
  cell.toggleClass(CLASS.human, meta.author === 'human');
  [CLASS.answer, CLASS.answerError].forEach(c => cell.removeClass(c));
  node.dataset.rlmStep = String(meta.step);
  const step = log.get(meta.run_id)?.steps.find(s => s.step === meta.step) ?? null;
  if (step !== null) {
    node.dataset.rlmStatus = step.status;
  }
  badge.textContent = badgeText(meta, step);
  badge.title = stepTooltip(step, meta.step, meta.author);
  const reason = riskReason(meta);
  if (reason !== '') {
    badge.title += `\nWaited for you: ${reason}`;
  }
}

/** Why a step waited for the human (confirm-risky), kept in its cell's metadata: '' when it did not. */
function riskReason(meta: StepCellMeta | HumanCellMeta): string {
  return meta.author !== 'human' && typeof meta.reason === 'string' ? meta.reason : '';
}

/**
 * A step cell's badge: its number, who wrote it, whether it was left unrun, and why the scan
 * flagged it (as text, like all LM-made text): "check" while it waits for the human, and still
 * said once it ran, as its metadata keeps it.
 */
export function badgeText(meta: StepCellMeta | HumanCellMeta, step: StepView | null): string {
  const reason = riskReason(meta);
  const waiting = step === null || step.status === 'waiting';
  const notes = [
    AUTHOR_NOTE[meta.author],
    step?.status === 'stopped' ? 'not run' : '',
    reason === '' ? '' : waiting ? `check: ${reason}` : `flagged: ${reason}`
  ].filter(Boolean);
  return [`RLM step ${meta.step}`, ...notes].join(' · ');
}
