/**
 * A line diff of two proposals for one step (Regenerate shows the new one against the old), pure.
 * The longest common subsequence of lines, by a table: proposals are a few dozen lines, so the
 * quadratic table costs nothing, and a line kept in both is shown once, as context.
 */

export type DiffOp = 'same' | 'removed' | 'added';

export interface DiffLine {
  op: DiffOp;
  text: string;
}

/** Lines of a cell's source; a final newline adds no empty line. */
function lines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const split = text.split(/\r?\n/);
  return split[split.length - 1] === '' ? split.slice(0, -1) : split;
}

/** `before` → `after`, line by line: removals come before the additions that replace them. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = lines(before);
  const b = lines(after);
  // common[i][j]: the length of the longest common subsequence of a[i:] and b[j:].
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ op: 'same', text: a[i] });
      i++;
      j++;
    } else if (j === b.length || (i < a.length && common[i + 1][j] >= common[i][j + 1])) {
      out.push({ op: 'removed', text: a[i] });
      i++;
    } else {
      out.push({ op: 'added', text: b[j] });
      j++;
    }
  }
  return out;
}

/** "2 lines removed, 3 added", for the diff's heading. */
export function diffSummary(diff: readonly DiffLine[]): string {
  const removed = diff.filter(d => d.op === 'removed').length;
  const added = diff.filter(d => d.op === 'added').length;
  const plural = (n: number): string => (n === 1 ? 'line' : 'lines');
  return `${removed} ${plural(removed)} removed, ${added} ${plural(added)} added`;
}
