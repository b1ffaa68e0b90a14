import { canContinueFrom, continueSource } from '../rewind';
import { RunLog } from '../runs';
import { callFinished, callStarted, ev } from './helpers';

describe('the branch cell of "Continue from here"', () => {
  it('keeps the magic line and the question, and names the run and step', () => {
    expect(continueSource('%%rlm -c doc --mode step\nWho signed {what}?', 'abc123', 3)).toBe(
      '%%rlm -c doc --mode step --continue-from abc123:3\nWho signed {what}?'
    );
  });

  it('replaces the continue-from of a branch it branches again', () => {
    expect(continueSource('%%rlm -c doc --continue-from old:2 --model m\nQ', 'new', 4)).toBe(
      '%%rlm -c doc --model m --continue-from new:4\nQ'
    );
    expect(continueSource('%%rlm -c doc --continue-from=old:2', 'new', 1)).toBe(
      '%%rlm -c doc --continue-from new:1\n'
    );
  });

  it('is none for a cell that is not a %%rlm cell', () => {
    expect(continueSource('print(1)', 'r', 1)).toBeNull();
    expect(continueSource('%%rlmx -c doc', 'r', 1)).toBeNull();
  });
});

describe('where a branch may start', () => {
  const run = {
    status: 'done',
    steps: [
      { step: 1, author: 'root', status: 'done' },
      { step: 2, author: 'human', status: 'done' },
      { step: 3, author: 'human-edited', status: 'error' }
    ]
  };

  it('a root step, edited or not, of a run that ended, with no other run going', () => {
    expect(canContinueFrom(run, 1, false)).toBe(true);
    expect(canContinueFrom(run, 3, false)).toBe(true);
    expect(canContinueFrom(run, 2, false)).toBe(false);
    expect(canContinueFrom(run, 9, false)).toBe(false);
    expect(canContinueFrom(run, 1, true)).toBe(false);
    expect(canContinueFrom({ ...run, status: 'running' }, 1, false)).toBe(false);
  });

  it('only a step that ran: one the run stopped before it ran has nothing to continue from', () => {
    const stopped = { status: 'stopped', steps: [...run.steps, { step: 4, author: 'root', status: 'stopped' }] };
    expect(canContinueFrom(stopped, 3, false)).toBe(true);
    expect(canContinueFrom(stopped, 4, false)).toBe(false);
  });
});

describe('a branch in the run log', () => {
  it('names the run it continues, shows replayed steps in that run’s cells, and counts no replayed call', () => {
    const log = new RunLog();
    log.applyEvent(ev('run_started', { run_id: 'p', question: 'q', model: 'm', sub_model: 'm' }));
    log.bindCell('p', 1, 'cell-of-step-1');
    log.applyEvent(ev('step_started', { run_id: 'p', step: 1, code: 'x = 1' }));
    log.applyEvent(ev('run_started', { run_id: 'b', question: 'q', model: 'm', sub_model: 'm', parent_run: 'p', branched_at: 2 }));
    log.applyEvent(ev('step_started', { run_id: 'b', step: 1, code: 'x = 1', replayed: true }));
    log.applyEvent(callStarted('c1', 1, { run_id: 'b' }));
    log.applyEvent(callFinished('c1', 1, { run_id: 'b', replayed: true, cost: 0 }));
    log.applyEvent(ev('step_finished', { run_id: 'b', step: 1, output: '', error: null }));
    const branch = log.get('b')!;
    expect([branch.parentRun, branch.branchedAt]).toEqual(['p', 2]);
    expect(branch.steps[0]).toMatchObject({ replayed: true, author: 'root', status: 'done', cellId: 'cell-of-step-1' });
    expect(branch.totals.calls).toBe(0);
  });
});
