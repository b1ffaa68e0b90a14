import { badgeText } from '../cells';
import type { StepCellMeta } from '../protocol';
import type { StepStatus, StepView } from '../runs';

function step(status: StepStatus): StepView {
  return {
    step: 2,
    author: 'root',
    status,
    code: 'import subprocess',
    cellId: 'c2',
    calls: [],
    reply: null,
    lmS: null,
    output: null,
    elapsedS: status === 'done' ? 0.1 : null,
    error: null,
    replayed: false,
    tools: []
  };
}

const flagged: StepCellMeta = {
  run_id: 'r1',
  step: 2,
  author: 'root',
  proposed: 'import subprocess',
  reason: 'it imports subprocess'
};

describe('a step badge keeps why the scan flagged it', () => {
  it('asks for a check while the step waits', () => {
    expect(badgeText(flagged, step('waiting'))).toBe('RLM step 2 · check: it imports subprocess');
    expect(badgeText(flagged, null)).toBe('RLM step 2 · check: it imports subprocess');
  });

  it.each(['done', 'error', 'running'] as StepStatus[])('still says it once the step is %s', status => {
    expect(badgeText(flagged, step(status))).toBe('RLM step 2 · flagged: it imports subprocess');
  });

  it('after the human edited and ran it, and when it was stopped before it ran', () => {
    expect(badgeText({ ...flagged, author: 'human-edited' }, step('done'))).toBe(
      'RLM step 2 · edited · flagged: it imports subprocess'
    );
    expect(badgeText(flagged, step('stopped'))).toBe('RLM step 2 · not run · flagged: it imports subprocess');
  });

  it('says nothing of a scan for a step it did not flag, or a human step', () => {
    expect(badgeText({ ...flagged, reason: undefined }, step('done'))).toBe('RLM step 2');
    expect(badgeText({ run_id: 'r1', step: 3, author: 'human' }, null)).toBe('RLM step 3 · human');
  });
});
