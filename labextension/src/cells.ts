/**
 * How RLM cells look: a class on the cell node (left border), a badge "RLM step N" whose tooltip
 * sums the step's sub-calls. Everything is derived from the cell's `metadata.rlm`, so a saved
 * notebook looks the same when reopened.
 */

import type { Cell } from '@jupyterlab/cells';

import { readCellMeta } from './protocol';
import { stepTooltip, type RunLog } from './runs';

export const CLASS = {
  step: 'rlm-step-cell',
  edited: 'rlm-step-human-edited',
  answer: 'rlm-answer-cell',
  answerError: 'rlm-answer-error',
  badge: 'rlm-badge'
} as const;

const ALL = [CLASS.step, CLASS.edited, CLASS.answer, CLASS.answerError];

export function decorateCell(cell: Cell, log: RunLog): void {
  if (cell.isDisposed) {
    return;
  }
  const meta = readCellMeta(cell.model.getMetadata('rlm'));
  const node = cell.node;
  let badge = node.querySelector<HTMLElement>(`:scope > .${CLASS.badge}`);
  if (meta === null) {
    ALL.forEach(c => cell.removeClass(c));
    badge?.remove();
    delete node.dataset.rlmRun;
    delete node.dataset.rlmStep;
    return;
  }
  node.dataset.rlmRun = meta.run_id;
  if (!badge) {
    badge = document.createElement('div');
    badge.className = CLASS.badge;
    node.appendChild(badge);
  }
  if ('answer' in meta) {
    cell.addClass(CLASS.answer);
    cell.toggleClass(CLASS.answerError, meta.error === true);
    [CLASS.step, CLASS.edited].forEach(c => cell.removeClass(c));
    delete node.dataset.rlmStep;
    badge.textContent = meta.error ? 'RLM ended' : 'RLM answer';
    badge.title = `Run ${meta.run_id}${log.get(meta.run_id)?.usage ? `\n${log.get(meta.run_id)?.usage}` : ''}`;
    return;
  }
  const edited = meta.author === 'human-edited';
  cell.addClass(CLASS.step);
  cell.toggleClass(CLASS.edited, edited);
  [CLASS.answer, CLASS.answerError].forEach(c => cell.removeClass(c));
  node.dataset.rlmStep = String(meta.step);
  badge.textContent = edited ? `RLM step ${meta.step} · edited` : `RLM step ${meta.step}`;
  const step = log.get(meta.run_id)?.steps.find(s => s.step === meta.step) ?? null;
  badge.title = stepTooltip(step, meta.step, meta.author);
}
