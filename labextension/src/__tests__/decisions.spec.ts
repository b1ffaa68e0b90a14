import {
  answerCell,
  cellRunId,
  commAction,
  editedMeta,
  humanCellMeta,
  insertIndex,
  isRlmKernel,
  nextMode,
  onProposal,
  placeIndex,
  proposalIndex,
  sameProposalText,
  stepCellMeta,
  takesHumanMeta,
  takesNewProposal,
  toolbarState
} from '../decisions';
import type { ProposeStepMsg } from '../protocol';

describe('which kernels speak the protocol', () => {
  it.each([
    ['rlm-python', undefined, true],
    ['python3', undefined, false],
    ['my-rlm', { rlm_kernel: { protocol: 1 } }, true],
    ['python3', { debugger: true }, false],
    [undefined, undefined, false]
  ])('%p with spec metadata %p: %p', (name, meta, expected) => {
    expect(isRlmKernel(name, meta)).toBe(expected);
  });
});

describe('the comm follows the kernel', () => {
  it.each([
    // hasComm, isRlm, status → action
    [false, true, 'idle', 'open'],
    [false, true, 'busy', 'open'],
    [false, true, 'starting', 'none'],
    [false, true, 'unknown', 'none'],
    [true, true, 'idle', 'none'],
    [true, true, 'unknown', 'none'], // a websocket blip: the kernel and its comm survive
    [true, true, 'restarting', 'drop'],
    [true, true, 'autorestarting', 'drop'],
    [true, true, 'dead', 'drop'],
    [false, true, 'restarting', 'none'],
    [false, false, 'idle', 'none'],
    [true, false, 'idle', 'drop']
  ] as const)('comm=%p rlm=%p status=%p → %p', (hasComm, isRlm, status, action) => {
    expect(commAction(hasComm, isRlm, status)).toBe(action);
  });

  it('reopens after a restart', () => {
    let hasComm = false;
    const actions = ['starting', 'idle', 'busy', 'idle', 'restarting', 'starting', 'idle'].map(status => {
      const action = commAction(hasComm, true, status);
      hasComm = action === 'open' ? true : action === 'drop' ? false : hasComm;
      return action;
    });
    expect(actions).toEqual(['none', 'open', 'none', 'none', 'drop', 'none', 'open']);
  });
});

describe('proposed steps', () => {
  const msg: ProposeStepMsg = {
    type: 'propose_step',
    run_id: 'r1',
    step: 3,
    code: 'print(1)',
    reply: 'Let me look.\n```repl\nprint(1)\n```',
    after_cell_id: 'b',
    mode: 'step',
    reason: '',
    can_regenerate: false
  };

  it('say when Regenerate brought the same code, and what is left to do', () => {
    const msg = { type: 'propose_step', run_id: 'r1', step: 3, code: 'x', reply: '', after_cell_id: null, mode: 'step', reason: '' } as const;
    expect(sameProposalText({ ...msg, can_regenerate: true })).toBe(
      'Regenerate: the root proposed the same code for step 3 again. Regenerate asks once more; or edit the cell, or run it.'
    );
    expect(sameProposalText({ ...msg, can_regenerate: false })).toContain('again. Edit the cell, or run it.');
  });

  it('of a run go after the cell that ran last, never above a cell of the run', () => {
    const step = (n: number) => ({ run_id: 'r1', step: n, author: 'root' as const, proposed: '', reply: '' });
    const cells = [
      { id: 'mine-before', meta: { run_id: 'r1', step: 6, author: 'human' as const } },
      { id: 'rlm', meta: null },
      { id: 's1', meta: step(1) },
      { id: 'mine-between', meta: { run_id: 'r1', step: 4, author: 'human' as const } },
      { id: 's2', meta: step(2) },
      { id: 'waiting', meta: step(7) },
      { id: 'other', meta: { run_id: 'r0', step: 1, author: 'root' as const, proposed: '', reply: '' } }
    ];
    expect(placeIndex(cells, 's2', 'r1')).toBe(6); // below the run's last cell
    expect(placeIndex(cells, 'mine-before', 'r1')).toBe(6); // a cell run above does not pull it up
    expect(placeIndex(cells, 'mine-before', 'r1', 'waiting')).toBe(5); // the cell moved is not counted
    expect(placeIndex(cells, 'other', 'r1')).toBe(7);
    expect(placeIndex(cells, null, 'r2')).toBe(7);
  });

  it('go right after the cell named, or at the end', () => {
    expect(insertIndex(['a', 'b', 'c'], 'b')).toBe(2);
    expect(insertIndex(['a', 'b', 'c'], 'c')).toBe(3);
    expect(insertIndex(['a', 'b', 'c'], 'gone')).toBe(3);
    expect(insertIndex(['a'], null)).toBe(1);
    expect(insertIndex([], 'a')).toBe(0);
  });

  it('run at once in auto mode and wait for review in step mode', () => {
    expect(onProposal('auto')).toBe('run');
    expect(onProposal('step')).toBe('review');
  });

  it('carry the run, step, author and what the root proposed; an edit keeps the proposal', () => {
    const meta = stepCellMeta(msg);
    expect(meta).toEqual({ run_id: 'r1', step: 3, author: 'root', proposed: 'print(1)', reply: msg.reply });
    expect(editedMeta(meta)).toEqual({ ...meta, author: 'human-edited' });
  });
});

describe('the answer cell', () => {
  it('holds the answer', () => {
    const cell = answerCell({ type: 'run_finished', run_id: 'r1', answer: '42', answer_markdown: null, error: null, stop: 'answer', after_cell_id: 'x', usage: '2 LM calls <x>' });
    expect(cell.source).toContain('42');
    expect(cell.source).toContain('2 LM calls \\<x\\>');
    expect(cell.metadata).toEqual({ rlm: { run_id: 'r1', answer: true } });
  });

  it('or why there is none', () => {
    const cell = answerCell({ type: 'run_finished', run_id: 'r1', answer: null, answer_markdown: null, error: 'Run cancelled: stopped by the user.', stop: 'user', after_cell_id: null, usage: '' });
    expect(cell.source).toContain('stopped by the user\\.');
    expect(cell.metadata.rlm).toEqual({ run_id: 'r1', answer: true, error: true });
  });
});

describe('the toolbar', () => {
  it('is hidden off RLM kernels, and enabled only during a run', () => {
    expect(toolbarState(false, null)).toMatchObject({ visible: false, enabled: false });
    expect(toolbarState(true, null)).toMatchObject({ visible: true, enabled: false, mode: 'auto' });
    expect(toolbarState(true, { mode: 'step', paused: true, status: 'running' })).toEqual({
      visible: true,
      enabled: true,
      modeEnabled: true,
      mode: 'step',
      paused: true
    });
    expect(toolbarState(true, { mode: 'auto', paused: true, status: 'done' })).toMatchObject({ enabled: false, paused: false });
  });

  it('lets the mode of the next run be chosen while idle', () => {
    expect(toolbarState(true, null, 'step')).toMatchObject({ enabled: false, modeEnabled: true, mode: 'step' });
    expect(toolbarState(false, null, 'step')).toMatchObject({ modeEnabled: false });
    expect(toolbarState(true, { mode: 'auto', paused: false, status: 'done' }, 'confirm-risky').mode).toBe('confirm-risky');
  });
});

describe('the permission ladder', () => {
  it('goes auto, confirm-risky, step and round', () => {
    expect(nextMode('auto')).toBe('confirm-risky');
    expect(nextMode('confirm-risky')).toBe('step');
    expect(nextMode('step')).toBe('auto');
  });

  it('keeps why a step waited in its cell, only when it waited', () => {
    const base = { type: 'propose_step', run_id: 'r1', step: 2, code: 'import os', reply: 'r', after_cell_id: null, can_regenerate: true } as const;
    expect(stepCellMeta({ ...base, mode: 'step', reason: 'it imports os' }).reason).toBe('it imports os');
    expect('reason' in stepCellMeta({ ...base, mode: 'auto', reason: '' })).toBe(false);
  });
});

describe('a new proposal for a step (Regenerate)', () => {
  const meta = { run_id: 'r1', step: 1, author: 'root', proposed: 'import os\n' } as const;
  it('replaces the cell only while it holds what the root proposed', () => {
    expect(takesNewProposal('import os\n', meta)).toBe(true);
    expect(takesNewProposal('import os\nprint(1)\n', meta)).toBe(false); // the human typed
    expect(takesNewProposal('import os\n', { ...meta, author: 'human-edited' })).toBe(false);
    expect(takesNewProposal('x', null)).toBe(false);
  });
});

describe('cells of a run in the shared notebook', () => {
  const proposal: ProposeStepMsg = {
    type: 'propose_step',
    run_id: 'r1',
    step: 2,
    code: 'print(2)',
    reply: '',
    after_cell_id: null,
    mode: 'step',
    reason: '',
    can_regenerate: true
  };

  it("finds a proposal's cell that another view inserted, by its metadata", () => {
    const mine = stepCellMeta(proposal);
    expect(proposalIndex([null, { ...mine, step: 1 }, mine], proposal)).toBe(2);
    expect(proposalIndex([editedMeta(mine)], proposal)).toBe(0); // edited, still that proposal
    expect(proposalIndex([{ ...mine, proposed: 'print(3)' }], proposal)).toBe(-1);
    expect(proposalIndex([{ ...mine, run_id: 'r0' }, humanCellMeta('r1', 2)], proposal)).toBe(-1);
  });

  it("marks a human step's cell, never one of the extension's own", () => {
    expect(humanCellMeta('r1', 3)).toEqual({ run_id: 'r1', step: 3, author: 'human' });
    expect(takesHumanMeta(null)).toBe(true);
    expect(takesHumanMeta(humanCellMeta('r0', 1))).toBe(true);
    expect(takesHumanMeta(stepCellMeta(proposal))).toBe(false);
    expect(takesHumanMeta({ run_id: 'r1', answer: true })).toBe(false);
  });

  it('names the run of a code cell of a run, for the kernel', () => {
    expect(cellRunId(stepCellMeta(proposal))).toBe('r1');
    expect(cellRunId(humanCellMeta('r0', 1))).toBe('r0');
    expect(cellRunId({ run_id: 'r1', answer: true })).toBeNull();
    expect(cellRunId(null)).toBeNull();
  });
});
