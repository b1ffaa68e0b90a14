/** Undo a run: which run, which of its cells go (never a human's, never the %%rlm cell), and the dialog. */

import { editedMeta, humanCellMeta, undoDialog, undoKept, undoPlan, undoRunId, type CellInfo } from '../decisions';
import type { StepCellMeta } from '../protocol';

const step = (runId: string, n: number): StepCellMeta => ({
  run_id: runId,
  step: n,
  author: 'root',
  proposed: `print(${n})`
});

// A notebook: a setup cell, run r1 (%%rlm, two steps, a human step, an answer), a cell of the
// human's, then run r2 (%%rlm, one step edited, an answer that says it ended without one).
const NOTEBOOK: CellInfo[] = [
  { id: 'setup', meta: null },
  { id: 'magic1', meta: null },
  { id: 'r1s1', meta: step('r1', 1) },
  { id: 'r1h2', meta: humanCellMeta('r1', 2) },
  { id: 'r1s3', meta: step('r1', 3) },
  { id: 'r1a', meta: { run_id: 'r1', answer: true } },
  { id: 'mine', meta: null },
  { id: 'magic2', meta: null },
  { id: 'r2s1', meta: editedMeta(step('r2', 1)) },
  { id: 'r2a', meta: { run_id: 'r2', answer: true, error: true } }
];

describe('which run Undo acts on', () => {
  it("the active cell's run", () => {
    expect(undoRunId(['r1'], ['r1', 'r2'], NOTEBOOK)).toBe('r1');
  });

  it('of the runs a %%rlm cell started, the latest that still has cells', () => {
    const rest = NOTEBOOK.filter(c => !c.id.startsWith('r2'));
    expect(undoRunId(['r1', 'r2'], ['r1', 'r2'], NOTEBOOK)).toBe('r2');
    expect(undoRunId(['r1', 'r2'], ['r1', 'r2'], rest)).toBe('r1');
    expect(undoRunId(['r3'], ['r1', 'r2'], NOTEBOOK)).toBe('r3'); // its own run, even with no cells
  });

  it("else the notebook's latest run that still has cells", () => {
    expect(undoRunId([], ['r1', 'r2'], NOTEBOOK)).toBe('r2');
    expect(undoRunId([], ['r1', 'r2', 'r3'], NOTEBOOK)).toBe('r2'); // r3 was undone
    expect(undoRunId([], [], NOTEBOOK)).toBe('r2'); // runs the log does not know: the cells' order
    expect(undoRunId([], ['r1'], [{ id: 'h', meta: humanCellMeta('r1', 1) }])).toBeNull();
    expect(undoRunId([], [], [])).toBeNull();
  });
});

describe('the cells Undo removes', () => {
  it("a run's steps and answer, not its human steps, the human's cells or the %%rlm cell", () => {
    expect(undoPlan('r1', NOTEBOOK, 'magic1')).toEqual({
      runId: 'r1',
      cellIds: ['r1s1', 'r1s3', 'r1a'],
      steps: 2,
      answers: 1,
      edited: 0
    });
    expect(undoPlan('r2', NOTEBOOK, 'magic2')).toEqual({
      runId: 'r2',
      cellIds: ['r2s1', 'r2a'],
      steps: 1,
      answers: 1,
      edited: 1
    });
  });

  it("keeps the run's human steps, to lose its marks", () => {
    expect(undoKept(undoPlan('r1', NOTEBOOK, 'magic1'), NOTEBOOK)).toEqual(['r1h2']);
    expect(undoKept(undoPlan('r2', NOTEBOOK, 'magic2'), NOTEBOOK)).toEqual([]);
  });

  it('does not count as edited a step that ran with the code a Reject kept', () => {
    const rejected = { ...editedMeta(step('r3', 1)), kept: 'print(0)' };
    const cells: CellInfo[] = [
      { id: 'a', meta: rejected, source: 'print(0)\n' },
      { id: 'b', meta: { ...rejected, step: 2 }, source: 'print(0) # mine' },
      { id: 'c', meta: editedMeta(step('r3', 3)), source: 'x' }
    ];
    expect(undoPlan('r3', cells).edited).toBe(2);
    expect(undoPlan('r3', cells.slice(0, 1)).edited).toBe(0);
  });

  it('never the cell it is told to keep, whatever its metadata says', () => {
    const odd: CellInfo[] = [{ id: 'magic', meta: step('r1', 1) }, ...NOTEBOOK];
    expect(undoPlan('r1', odd, 'magic').cellIds).toEqual(['r1s1', 'r1s3', 'r1a']);
  });

  it('nothing of a run with no cells left', () => {
    expect(undoPlan('r9', NOTEBOOK).cellIds).toEqual([]);
  });
});

describe('the confirmation', () => {
  it('names how many cells go and that variables are not restored', () => {
    const dialog = undoDialog(undoPlan('r1', NOTEBOOK, 'magic1'), false);
    expect(dialog.title).toBe('Undo RLM run');
    expect(dialog.body).toContain('Remove the 3 cells run r1 inserted (2 step cells and 1 answer cell)?');
    expect(dialog.body).toContain('Variables are not restored');
    expect(dialog.body).toContain('%%rlm cell stay');
    expect(dialog.accept).toBe('Remove 3 cells');
  });

  it('says when a step the human edited goes too', () => {
    const dialog = undoDialog(undoPlan('r2', NOTEBOOK), false);
    expect(dialog.body).toContain('2 cells run r2 inserted (1 step cell and 1 answer cell)? 1 step was edited by you.');
  });

  it('asks to stop a run that is still going, and removes nothing', () => {
    const dialog = undoDialog(undoPlan('r1', NOTEBOOK), true);
    expect(dialog.body).toContain('still going. Stop it first');
    expect(dialog.accept).toBeNull();
  });

  it('says so when the run has no cells left', () => {
    const dialog = undoDialog(undoPlan('r9', NOTEBOOK), false);
    expect(dialog.body).toBe('Run r9 has no cells left in this notebook.');
    expect(dialog.accept).toBeNull();
  });
});
