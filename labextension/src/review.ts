/**
 * Regenerate's review: a new proposal for a waiting step, shown under the step's cell as a line
 * diff against the code the cell holds (removed lines red, added lines green), with Accept and
 * Reject. The proposal is LM-made text: it reaches the DOM as text only (see safe.ts).
 */

import type { Cell } from '@jupyterlab/cells';
import { PanelLayout, Widget } from '@lumino/widgets';

import { diffSummary, lineDiff, type DiffOp } from './diff';

export const REVIEW_CLASS = 'rlm-review';

const MARK: Record<DiffOp, string> = { same: ' ', removed: '-', added: '+' };

export const ACCEPT_TITLE = 'Put the new proposal in the cell; run it when you are ready';
export const REJECT_TITLE =
  'Keep the code in the cell. The run now waits with the new proposal, so running this code is ' +
  'recorded as your edit of the new proposal (the root sees the difference next turn).';

export interface IReviewOptions {
  step: number;
  before: string;
  after: string;
  onAccept: () => void;
  onReject: () => void;
}

export class ProposalReview extends Widget {
  constructor(options: IReviewOptions) {
    super();
    this.addClass(REVIEW_CLASS);
    const diff = lineDiff(options.before, options.after);
    const node = this.node;

    const head = document.createElement('div');
    head.className = 'rlm-review-head';
    const title = document.createElement('span');
    title.className = 'rlm-review-title';
    title.textContent = `New proposal for step ${options.step} · ${diffSummary(diff)}`;
    head.appendChild(title);
    head.appendChild(this.button('accept', 'Accept', ACCEPT_TITLE, options.onAccept, true));
    head.appendChild(this.button('reject', 'Reject', REJECT_TITLE, options.onReject, false));
    node.appendChild(head);

    const body = document.createElement('pre');
    body.className = 'rlm-review-diff';
    for (const line of diff) {
      const row = document.createElement('div');
      row.className = `rlm-diff-line rlm-diff-${line.op}`;
      row.dataset.op = line.op;
      row.textContent = `${MARK[line.op]} ${line.text}`;
      body.appendChild(row);
    }
    node.appendChild(body);
  }

  private button(action: string, label: string, title: string, onClick: () => void, accept: boolean): HTMLElement {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = `jp-Button jp-mod-styled ${accept ? 'jp-mod-accept' : 'jp-mod-reject'} rlm-review-${action}`;
    button.dataset.rlmReview = action;
    button.textContent = label;
    button.title = title;
    button.addEventListener('click', () => onClick());
    return button;
  }
}

/** Show the review under the cell's input (once the cell is rendered); false when it cannot be. */
export async function attachReview(cell: Cell, review: ProposalReview): Promise<boolean> {
  await cell.ready;
  const layout = cell.layout;
  const input = cell.inputArea?.parent ?? null;
  if (cell.isDisposed || review.isDisposed || !(layout instanceof PanelLayout) || input === null) {
    return false;
  }
  const at = layout.widgets.indexOf(input);
  layout.insertWidget(at === -1 ? layout.widgets.length : at + 1, review);
  return true;
}
