/**
 * The run log's fold, held to the fixtures that hold the kernel's too (tests/unit/test_fold_fixtures.py).
 *
 * Each file of tests/fixtures/fold is events in (their JSON form, as the comm and a saved
 * trajectory carry them) and the view out: the run's tallies, its step tree and the lines every
 * view prints. commands.json is the table of cell sources that are commands of the kernel's.
 * `snapshot` writes the fold in the fixtures' shape, as the Python test does.
 */
import { isEvent, withDefaults } from '../protocol';
import { percent, stepLine, stepStatus, toolLine, totalsLine } from '../format';
import { rlmCommand, RunLog, type CallView, type RunView, type StepView } from '../runs';

// Node's own, in jest; the extension's build has no Node types.
declare const require: (module: 'fs') => {
  readFileSync(path: string, encoding: 'utf8'): string;
  readdirSync(path: string): string[];
};
declare const __dirname: string;

const FIXTURES = `${__dirname}/../../../tests/fixtures/fold`;
const fs = require('fs');
const read = (name: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(`${FIXTURES}/${name}`, 'utf8')) as Record<string, unknown>;
const RUNS = fs
  .readdirSync(FIXTURES)
  .filter(name => name.endsWith('.json') && name !== 'commands.json')
  .sort();

const cost = (c: number | null): number | null => (c === null ? null : Number(c.toFixed(6)));

function call(c: CallView): Record<string, unknown> {
  return {
    id: c.callId,
    kind: c.kind,
    depth: c.depth,
    model: c.model,
    prompt: c.prompt,
    reply: c.response,
    status: c.status,
    batch: c.batchId,
    input_tokens: c.inputTokens,
    output_tokens: c.outputTokens,
    cost: cost(c.cost),
    error: c.error,
    lm_call: c.lmCall,
    tools: c.tools.map(toolLine)
  };
}

function step(s: StepView, run: RunView): Record<string, unknown> {
  return {
    step: s.step,
    author: s.author === 'human' ? 'human' : 'root',
    edited: s.author === 'human-edited',
    replayed: s.replayed,
    code: s.code,
    reply: s.reply?.response ?? '',
    output: s.output,
    elapsed_s: s.elapsedS,
    status: ['waiting', 'running'].includes(stepStatus(s, run)) ? 'open' : stepStatus(s, run),
    error: s.error,
    lm_s: s.lmS,
    calls: s.calls.map(call),
    tools: s.tools.map(toolLine)
  };
}

/** The fold in the fixtures' shape. */
function snapshot(run: RunView): Record<string, unknown> {
  const calls = run.steps.flatMap(s => s.calls);
  return {
    view: {
      run_id: run.runId,
      status: run.status,
      question: run.question,
      parent_run: run.parentRun,
      branched_at: run.branchedAt,
      answer: run.answer,
      error: run.error,
      warnings: run.warnings,
      sent_back: run.sentBack,
      tallies: {
        lm_calls: run.totals.calls,
        root_calls: run.root.calls,
        sub_calls: run.totals.calls - run.root.calls,
        input_tokens: run.totals.inputTokens,
        output_tokens: run.totals.outputTokens,
        cached_tokens: run.totals.cachedTokens,
        cost: cost(run.totals.cost),
        tool_calls: run.toolCalls,
        running: run.totals.running,
        failed_calls: calls.filter(c => c.status === 'error').length
      },
      steps: run.steps.map(s => step(s, run))
    },
    lines: { steps: run.steps.map(s => stepLine(s, run)), totals: totalsLine(run) }
  };
}

describe.each(RUNS)('the fold of %s', name => {
  const fixture = read(name) as {
    events: unknown[];
    view: unknown;
    lines: unknown;
    front?: { paused?: boolean; waiting_for?: number | null };
  };
  const log = new RunLog();
  // As a saved trajectory is read: the front end gets no streamed tokens (root_progress counts them).
  const skipped = fixture.events.filter(e => !isEvent(e)).map(e => (e as { kind: string }).kind);
  for (const event of fixture.events.filter(isEvent).map(withDefaults)) {
    log.applyEvent(event);
  }
  // What the front end knows that no event says (run_state): whether the run is paused, the step that waits.
  const run = log.runs[0];
  if (run !== undefined) {
    run.paused = fixture.front?.paused ?? false;
    run.waitingFor = fixture.front?.waiting_for ?? null;
  }

  it('has events the front end knows, but for streamed tokens', () => {
    expect(skipped.filter(kind => kind !== 'root_token')).toEqual([]);
  });

  it('is one run, with the fixture’s tallies and step tree', () => {
    expect(log.runs).toHaveLength(1);
    expect(snapshot(log.runs[0]).view).toEqual(fixture.view);
  });

  it('prints the fixture’s lines', () => {
    expect(snapshot(log.runs[0]).lines).toEqual(fixture.lines);
  });
});

describe('commands of the kernel', () => {
  const cases = (read('commands.json') as { cases: Array<[string, string | null]> }).cases;
  it.each(cases)('%j is %p', (source, command) => {
    expect(rlmCommand(source)).toBe(command);
  });
});

describe('percent', () => {
  it('is never rounded to none or all of it', () => {
    expect(percent(950, 2700)).toBe('35%');
    expect(percent(1, 1000)).toBe('<1%');
    expect(percent(999, 1000)).toBe('>99%');
    expect(percent(1000, 1000)).toBe('100%');
    expect(percent(0, 0)).toBe('0%');
  });
});
