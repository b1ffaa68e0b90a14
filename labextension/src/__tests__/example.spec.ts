/**
 * examples/notebook_mode.ipynb, saved from a real notebook-mode run, read as the extension reads a
 * notebook it opens: each cell's `metadata.rlm` with its schema, the `%%rlm` cell's saved
 * trajectory restored in the runs panel's model. nbval cannot re-run notebook mode (it has no
 * front end to insert step cells), so this is how CI keeps the example honest.
 */
import { readCellMeta, savedEvents } from '../protocol';
import { RunLog } from '../runs';

// Node's own, in jest; the extension's build has no Node types.
declare const require: (module: 'fs') => { readFileSync(path: string, encoding: 'utf8'): string };
declare const __dirname: string;

interface Cell {
  id: string;
  cell_type: string;
  source: string | string[];
  metadata: { rlm?: unknown };
  outputs?: Array<{ metadata?: unknown }>;
}

const notebook = JSON.parse(
  require('fs').readFileSync(`${__dirname}/../../../examples/notebook_mode.ipynb`, 'utf8')
) as { cells: Cell[] };
const text = (cell: Cell): string => (Array.isArray(cell.source) ? cell.source.join('') : cell.source);

describe('the notebook-mode example', () => {
  const rlmCell = notebook.cells.find(c => text(c).startsWith('%%rlm'))!;
  const metas = notebook.cells.map(c => readCellMeta(c.metadata.rlm));

  it('has its step cells and its answer cell, of one run, right after the %%rlm cell', () => {
    const first = notebook.cells.indexOf(rlmCell) + 1;
    const ours = metas.slice(first, first + 3);
    const kind = (m: (typeof ours)[number]): number | string | null =>
      m === null ? null : 'step' in m ? m.step : 'answer';
    expect(ours.map(kind)).toEqual([1, 2, 'answer']);
    expect(new Set(ours.map(m => m?.run_id)).size).toBe(1);
    expect(metas.filter(m => m !== null)).toHaveLength(3);
    for (const [i, meta] of ours.slice(0, 2).entries()) {
      expect(meta).toMatchObject({ author: 'root' });
      expect(meta !== null && 'proposed' in meta ? meta.proposed : null).toBe(text(notebook.cells[first + i]));
    }
  });

  it('restores its run from the saved trajectory, as the runs panel shows it on reopening', () => {
    const saved = (rlmCell.outputs ?? []).map(o => o.metadata).find(m => savedEvents(m).length > 0);
    const log = new RunLog();
    log.applySaved(savedEvents(saved));
    expect(log.runs).toHaveLength(1);
    const [run] = log.runs;
    expect(run.runId).toBe(metas.find(m => m !== null)!.run_id);
    expect(run.status).toBe('done');
    expect(run.answer).toBe('disk full: 15, timeout: 14, bad checksum: 14');
    expect(run.steps.map(s => [s.step, s.status, s.calls.length])).toEqual([
      [1, 'done', 5],
      [2, 'done', 0]
    ]);
  });
});
