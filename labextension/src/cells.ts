/**
 * How RLM cells look: a class on the cell node (left border), a badge "RLM step N" (with
 * "edited", "human", "not run" or why it waited, when so) whose tooltip sums the step's tokens,
 * latency and cost. Everything is derived from the cell's `metadata.rlm`, so a saved notebook
 * looks the same when reopened.
 */

import type { Cell } from '@jupyterlab/cells';

import { readCellMeta } from './protocol';
import { stepTooltip } from './format';
import type { RunLog, StepAuthor } from './runs';

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
  const notes = [AUTHOR_NOTE[meta.author], step?.status === 'stopped' ? 'not run' : ''].filter(Boolean);
  badge.textContent = [`RLM step ${meta.step}`, ...notes].join(' · ');
  badge.title = stepTooltip(step, meta.step, meta.author);
  const reason = meta.author !== 'human' && typeof meta.reason === 'string' ? meta.reason : '';
  if (reason !== '') {
    // confirm-risky: say why this step waited for the human (as text, like all LM-made text)
    if (step === null || step.status === 'waiting') {
      badge.textContent += ` · check: ${reason}`;
    }
    badge.title += `\nWaited for you: ${reason}`;
  }
}
