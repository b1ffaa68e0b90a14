/** Regenerate's review: the line diff of two proposals, and what a new proposal does to its cell. */

import { editedMeta, onReproposal, stepCellMeta } from '../decisions';
import { diffSummary, lineDiff } from '../diff';
import type { ProposeStepMsg } from '../protocol';

const ops = (before: string, after: string): string[] =>
  lineDiff(before, after).map(d => `${{ same: ' ', removed: '-', added: '+' }[d.op]}${d.text}`);

describe('the line diff of two proposals', () => {
  it.each([
    ['same code', 'a\nb\n', 'a\nb', [' a', ' b']],
    ['a line changed', 'a\nb\nc', 'a\nB\nc', [' a', '-b', '+B', ' c']],
    ['a line added', 'a\nc', 'a\nb\nc', [' a', '+b', ' c']],
    ['a line removed', 'a\nb\nc', 'a\nc', [' a', '-b', ' c']],
    ['from nothing', '', 'x = 1', ['+x = 1']],
    ['to nothing', 'x = 1\n', '', ['-x = 1']],
    ['all new', 'import os\nos.listdir()', 'print(n)', ['-import os', '-os.listdir()', '+print(n)']],
    ['Windows line ends', 'a\r\nb', 'a\nb', [' a', ' b']]
  ])('%s', (_, before, after, expected) => {
    expect(ops(before, after)).toEqual(expected);
  });

  it('keeps the longest run of common lines, and every line of each side once', () => {
    const before = 'x = 1\ny = 2\nprint(x)\nprint(y)\nFINAL(x)';
    const after = 'x = 1\nprint(x)\nz = 3\nprint(y)\nFINAL(z)';
    const diff = lineDiff(before, after);
    expect(diff.filter(d => d.op === 'same').map(d => d.text)).toEqual(['x = 1', 'print(x)', 'print(y)']);
    expect(diff.filter(d => d.op !== 'added').map(d => d.text)).toEqual(before.split('\n'));
    expect(diff.filter(d => d.op !== 'removed').map(d => d.text)).toEqual(after.split('\n'));
  });

  it('sums itself up', () => {
    expect(diffSummary(lineDiff('a\nb', 'a\nc\nd'))).toBe('1 line removed, 2 lines added');
    expect(diffSummary(lineDiff('a', 'a'))).toBe('0 lines removed, 0 lines added');
  });
});

describe('a new proposal for a step whose cell exists (Regenerate)', () => {
  const first: ProposeStepMsg = {
    type: 'propose_step',
    run_id: 'r1',
    step: 2,
    code: 'import shutil\nshutil.disk_usage("/")',
    reply: '',
    after_cell_id: null,
    mode: 'step',
    reason: '',
    can_regenerate: true
  };
  const second: ProposeStepMsg = { ...first, code: 'print(n)\nFINAL(n)' };
  const third: ProposeStepMsg = { ...first, code: 'FINAL(n)' };
  const meta = stepCellMeta(first);

  it('waits for review, as a diff, when the cell holds the earlier proposal', () => {
    expect(onReproposal(first.code, meta, second, null)).toBe('review');
  });

  it('replaces the code when the new proposal runs at once (confirm-risky found nothing)', () => {
    expect(onReproposal(first.code, meta, { ...second, mode: 'auto' }, null)).toBe('replace');
  });

  it('replaces without a diff when the code is the same', () => {
    expect(onReproposal(first.code, meta, { ...first, reply: 'again' }, null)).toBe('replace');
  });

  it('never writes over a cell the human edited: the proposal gets a cell of its own', () => {
    expect(onReproposal(`${first.code}\nprint(1)`, meta, second, null)).toBe('new-cell');
    expect(onReproposal(first.code, editedMeta(meta), second, null)).toBe('new-cell');
    expect(onReproposal(first.code, null, second, null)).toBe('new-cell');
    expect(onReproposal(first.code, { run_id: 'r1', step: 2, author: 'human' }, second, null)).toBe('new-cell');
  });

  it('while a diff shows, a third proposal is reviewed against the code the cell kept', () => {
    // The cell kept the first proposal; its metadata names the second.
    const reviewing = stepCellMeta(second);
    expect(onReproposal(first.code, reviewing, third, first.code)).toBe('review');
    expect(onReproposal(first.code, reviewing, third, null)).toBe('new-cell'); // no diff: the code is an edit
    expect(onReproposal('typed', reviewing, third, first.code)).toBe('new-cell');
  });
});
