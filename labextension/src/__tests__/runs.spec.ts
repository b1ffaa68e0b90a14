import { parseKernelMsg, type KernelMsg } from '../protocol';
import { formatCost, formatTally, formatTokens, stepTooltip, toolCallText, toolNames, toolOutcome } from '../format';
import { RunLog, stepTally, stepTools, type ToolView } from '../runs';
import recorded from './fixtures/kernel_run.json';
import {
  callFinished,
  callStarted,
  ev,
  events,
  rootReply,
  runEnded,
  started,
  stepFinished,
  stepStarted
} from './helpers';

function replay(messages: unknown[], onEach?: (msg: KernelMsg, log: RunLog) => void): RunLog {
  const log = new RunLog();
  for (const data of messages) {
    const msg = parseKernelMsg(data);
    expect(msg).not.toBeNull();
    if (msg !== null) {
      onEach?.(msg, log);
      log.applyMessage(msg);
    }
  }
  return log;
}

describe('a run recorded from the real kernel (scripts/record_fixture.py)', () => {
  const usage = (recorded as Array<{ type: string; usage?: string }>).find(m => m.type === 'run_finished')!.usage!;

  // The front end's own observations, at the moments the extension would make them.
  const log = replay(recorded, (msg, log) => {
    if (msg.type === 'propose_step') {
      log.bindCell(msg.run_id, msg.step, `step-${msg.run_id}-${msg.step}`); // tests/frontend.py's ids
    }
    if (msg.type === 'events' && msg.events.some(e => e.kind === 'step_started' && e.author === 'human')) {
      log.cellRun('human-cell', 'mine = doc[:3]\nprint(mine)');
    }
  });
  const run = log.runs[0];

  it('ends with the answer, and no run active', () => {
    expect(log.runs).toHaveLength(1);
    expect(run.status).toBe('done');
    expect(run.answer).toBe('80');
    expect(run.usage).toBe(usage);
    expect(log.activeRunId).toBeNull();
    expect(run.cellId).toBe('rlm-cell');
  });

  it('counts what the kernel counts (usage line)', () => {
    const [, calls, inTokens, outTokens] = /^(\d+) LM calls.*?([\d,]+) in \/ ([\d,]+) out/.exec(usage)!;
    expect(run.totals.calls).toBe(Number(calls));
    expect(run.totals.inputTokens).toBe(Number(inTokens.replace(/,/g, '')));
    expect(run.totals.outputTokens).toBe(Number(outTokens.replace(/,/g, '')));
    expect(run.totals.running).toBe(0);
    expect(formatCost(run.totals.cost)).toBe(/cost (\$[\d.]+)/.exec(usage)![1]);
    expect(run.root.calls).toBe(3);
  });

  it('has each step with its author, status and cell', () => {
    expect(run.steps.map(s => [s.step, s.author, s.status, s.cellId])).toEqual([
      [1, 'root', 'done', `step-${run.runId}-1`],
      [2, 'human-edited', 'done', `step-${run.runId}-2`],
      [3, 'human', 'done', 'human-cell'],
      [4, 'root', 'done', `step-${run.runId}-4`]
    ]);
  });

  it("puts step 1's batched sub-calls under it, one failed", () => {
    const calls = run.steps[0].calls;
    expect(calls.map(c => c.status).sort()).toEqual(['done', 'done', 'error']);
    expect(calls.find(c => c.status === 'error')!.error).toContain('scripted failure');
    const tally = stepTally(run.steps[0]);
    expect(tally.calls).toBe(3);
    expect(tally.inputTokens).toBe(240);
  });
});

describe('sub-calls', () => {
  it('go from running to done, error or cancelled, and keep running totals', () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(stepStarted(1), callStarted('c1', 1), callStarted('c2', 1), callStarted('c3', 1)));
    const run = log.active!;
    expect(run.steps[0].status).toBe('running');
    expect(run.totals.running).toBe(3);
    expect(run.totals.calls).toBe(0);
    log.applyMessage(
      events(
        callFinished('c1', 1),
        callFinished('c2', 1, { error: 'HTTP 500', input_tokens: 0, output_tokens: 0, cost: 0 }),
        callFinished('c3', 1, { error: 'cancelled', cancelled: true, cost: 0, input_tokens: 0, output_tokens: 0 })
      )
    );
    expect(run.steps[0].calls.map(c => c.status)).toEqual(['done', 'error', 'cancelled']);
    expect(run.totals).toMatchObject({ calls: 3, running: 0, inputTokens: 100, outputTokens: 10 });
  });

  it('make the cost unknown when one call has no price', () => {
    const log = new RunLog();
    log.applyEvent(callStarted('c1', 1));
    log.applyEvent(callFinished('c1', 1, { cost: null }));
    log.applyEvent(callFinished('c2', 1));
    expect(log.get('r1')!.totals.cost).toBeNull();
    expect(formatTally(log.get('r1')!.totals)).toContain('$?');
  });

  it('count an rlm_query through its child run, not twice', () => {
    const log = new RunLog();
    log.applyMessage(started());
    const child = { run_id: 'child', parent_id: 'r1', depth: 1 };
    log.applyMessage(
      events(
        stepStarted(1),
        callStarted('c1', 1, { call_kind: 'rlm', model: 'rlm' }),
        ev('run_started', { ...child, question: null, context_meta: {}, model: 'm', sub_model: 'm', settings: {}, prompt: [] }),
        rootReply(1, { ...child, input_tokens: 500, output_tokens: 5, cost: 0.002 }),
        stepStarted(1, 'root', child), // the child's own step 1: not the parent's
        callStarted('c2', 1, child),
        callFinished('c2', 1, child),
        runEnded('child answer', null, child),
        callFinished('c1', 1, { call_kind: 'rlm', model: 'rlm', input_tokens: 0, output_tokens: 0, cost: null })
      )
    );
    const run = log.active!;
    expect(log.runs.map(r => r.runId)).toEqual(['r1']);
    expect(run.status).toBe('running');
    const step = run.steps[0];
    expect(step.calls.map(c => [c.kind, c.depth, c.status])).toEqual([
      ['rlm', 0, 'done'],
      ['root', 1, 'done'],
      ['llm', 1, 'done']
    ]);
    expect(run.totals).toMatchObject({ calls: 2, inputTokens: 600, outputTokens: 15 });
    expect(run.totals.cost).toBeCloseTo(0.003);
    expect(stepTally(step).calls).toBe(2);
  });

  it('still in flight when the run ends are shown cancelled', () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(stepStarted(1), callStarted('c1', 1)));
    log.applyMessage({
      type: 'run_finished',
      run_id: 'r1',
      answer: null,
      answer_markdown: null,
      error: 'Run cancelled: stopped by the user.',
      stop: 'user',
      after_cell_id: null,
      usage: ''
    });
    const run = log.get('r1')!;
    expect(run.status).toBe('stopped');
    expect(run.steps[0].calls[0].status).toBe('cancelled');
    expect(run.totals.running).toBe(0);
    expect(run.steps[0].status).toBe('stopped');
    log.applyEvent(callFinished('c1', 1, { error: 'cancelled', cancelled: true })); // late: changes nothing
    expect(run.totals.calls).toBe(0);
  });
});

describe('steps and runs', () => {
  it('follow the messages: proposal, execution (edited), run state, end', () => {
    const log = new RunLog();
    log.applyMessage(started('r1', 'step'));
    log.applyMessage({
      type: 'propose_step',
      run_id: 'r1',
      step: 1,
      code: 'x = 1',
      reply: '...',
      after_cell_id: 'rlm-cell',
      mode: 'step',
      reason: '',
      can_regenerate: true
    });
    const run = log.active!;
    expect(run.waitingFor).toBe(1);
    expect(run.canRegenerate).toBe(true);
    expect(run.steps[0]).toMatchObject({ author: 'root', status: 'waiting', code: 'x = 1' });
    log.bindCell('r1', 1, 'c-1');
    expect(log.cellRun('c-1', 'x = 2')).toBe(run.steps[0]);
    expect(run.steps[0].status).toBe('running');
    log.applyMessage({ type: 'step_executed', run_id: 'r1', step: 1, cell_id: 'c-1', edited: true, error: false });
    expect(run.steps[0]).toMatchObject({ author: 'human-edited', status: 'done' });
    expect(run.waitingFor).toBeNull();
    log.applyMessage({ type: 'run_state', run_id: 'r1', mode: 'auto', paused: true, waiting_for: null, can_regenerate: false });
    expect(run).toMatchObject({ mode: 'auto', paused: true });
    log.applyMessage(events(runEnded('42')));
    expect(run).toMatchObject({ status: 'done', answer: '42', paused: false });
    expect(log.stepOfCell('c-1')![1].step).toBe(1);
  });

  it('bind human cells to their human steps, and skip %rlm commands', () => {
    const log = new RunLog();
    expect(log.cellRun('a', 'print(1)')).toBeNull(); // no run
    log.applyMessage(started());
    expect(log.cellRun('hint', '%rlm hint look at the end')).toBeNull();
    expect(log.cellRun('again', '  %%rlm -c doc\nq')).toBeNull();
    expect(log.cellRun('empty', '   ')).toBeNull();
    expect(log.cellRun('mine', 'y = 2')).toBe('human');
    log.applyMessage(events(stepStarted(1, 'human'), stepFinished(1)));
    expect(log.active!.steps[0]).toMatchObject({ author: 'human', status: 'done', cellId: 'mine' });
  });

  it('mark a run that errs, and one that loses its kernel', () => {
    const log = new RunLog();
    log.applyMessage(started('r1'));
    log.applyMessage(events(runEnded(null, 'Budget exceeded')));
    expect(log.get('r1')!.status).toBe('error');
    log.applyMessage(started('r2'));
    log.kernelLost('the kernel restarted');
    expect(log.get('r2')).toMatchObject({ status: 'error' });
    expect(log.get('r2')!.error).toContain('restarted');
    expect(log.activeRunId).toBeNull();
  });

  it('pick up an active run on welcome (a reconnection)', () => {
    const log = new RunLog();
    log.applyMessage(started('r1'));
    log.kernelLost('websocket');
    log.applyMessage({ type: 'welcome', version: 1, active: 'r1' });
    expect(log.activeRunId).toBe('r1');
    expect(log.get('r1')!.status).toBe('running');
    log.applyMessage({ type: 'welcome', version: 1, active: null });
    expect(log.active).toBeNull();
  });

  it('restore saved runs, but never fold a live run twice', () => {
    const log = new RunLog();
    log.applyMessage(started('live'));
    const mine = { run_id: 'live' };
    log.applyMessage(events(rootReply(1, mine), runEnded('1', null, mine)));
    const saved = { run_id: 'old' };
    log.applySaved([
      rootReply(1, mine),
      runEnded('1', null, mine),
      ev('run_started', { ...saved, question: 'old q', context_meta: {}, model: 'm', sub_model: 's', settings: {}, prompt: [] }),
      rootReply(1, saved),
      stepStarted(1, 'root', saved),
      callStarted('k1', 1, saved),
      callFinished('k1', 1, saved),
      stepFinished(1),
      runEnded('2', null, saved)
    ]);
    expect(log.get('live')!.totals.calls).toBe(1);
    const old = log.get('old')!;
    expect(old).toMatchObject({ saved: true, status: 'done', question: 'old q', answer: '2' });
    expect(old.totals.calls).toBe(2);
    expect(log.totals().calls).toBe(3);
  });

  it('restore the mode a saved run ended in', () => {
    const log = new RunLog();
    log.applySaved([rootReply(1, { run_id: 'old' }), runEnded('1', null, { run_id: 'old' })], 'step');
    expect(log.get('old')!.mode).toBe('step');
    log.applySaved([rootReply(1, { run_id: 'older' })]);
    expect(log.get('older')!.mode).toBe('auto');
  });

  it("take a step's cell run a second time for a human step", () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(stepStarted(1)));
    log.bindCell('r1', 1, 'c-1');
    expect(log.cellRun('c-1', 'code 1')).toMatchObject({ step: 1, status: 'running' });
    log.applyMessage(events(stepFinished(1)));
    expect(log.cellRun('c-1', 'code 1')).toBe('human');
    log.applyMessage(events(stepStarted(2, 'human'), stepFinished(2)));
    expect(log.active!.steps[1]).toMatchObject({ author: 'human', cellId: 'c-1' });
  });

  it("say a proposal the run ended before was stopped", () => {
    const log = new RunLog();
    log.applyMessage(started('r1', 'step'));
    log.applyMessage(events(stepStarted(1)));
    log.applyMessage(events(runEnded(null, 'Run cancelled: stopped by the user.', { stop: 'user' })));
    expect(log.get('r1')!.steps[0].status).toBe('stopped');
  });

  it('know a repeated proposal and a repeated end', () => {
    const log = new RunLog();
    log.applyMessage(started());
    expect(log.proposalCell('r1', 1)).toBeNull();
    log.applyMessage({ type: 'propose_step', run_id: 'r1', step: 1, code: 'x', reply: '', after_cell_id: null, mode: 'auto', reason: '', can_regenerate: false });
    log.bindCell('r1', 1, 'c-1');
    expect(log.proposalCell('r1', 1)).toBe('c-1');
    expect(log.claimAnswer('r1')).toBe(true);
    expect(log.claimAnswer('r1')).toBe(false);
  });

  it('tell listeners of each change', () => {
    const log = new RunLog();
    let n = 0;
    const off = log.onChange(() => (n += 1));
    log.applyMessage(started());
    log.applyEvent(stepStarted(1));
    off();
    log.applyEvent(stepStarted(2));
    expect(n).toBe(2);
  });
});

describe('formatting', () => {
  it.each([
    [0, '$0'],
    [null, '$?'],
    [0.00042, '$0.0004'],
    [0.00003, '<$0.0001'],
    [0.1234, '$0.123']
  ])('cost %p is %p', (cost, text) => {
    expect(formatCost(cost)).toBe(text);
  });

  it('shortens big token counts', () => {
    expect(formatTokens(999)).toBe('999');
    expect(formatTokens(12_345)).toBe('12.3k');
  });

  it("puts a step's sub-call tokens, latency and cost in its badge tooltip", () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(stepStarted(1), callStarted('c1', 1), callFinished('c1', 1), callStarted('c2', 1)));
    const step = log.active!.steps[0];
    const tip = stepTooltip(step, 1, 'root');
    expect(tip).toContain('RLM step 1');
    expect(tip).toContain('1 sub-call (+1 running)');
    expect(tip).toContain('100 in / 10 out');
    expect(tip).toContain('latency: 0.50 s total');
    expect(tip).toContain('$0.0010');
    expect(stepTooltip(null, 3, 'human-edited')).toContain('edited by you');
  });

  it("puts the root reply that proposed a step in its tooltip, and how long it ran", () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(rootReply(1, { input_tokens: 1234, output_tokens: 56, latency_s: 0.8, cost: 0.002 })));
    log.applyMessage(events(stepStarted(1), stepFinished(1)));
    const tip = stepTooltip(log.active!.steps[0], 1, 'root');
    expect(tip).toContain('root LM reply: 1,234 in / 56 out tokens · latency: 0.80 s · $0.0020');
    expect(tip).toContain('No sub-calls.');
    expect(tip).toContain('ran in 0.10 s');
    // A proposal made again (Regenerate) is the new reply's.
    log.applyMessage(events(rootReply(2, { input_tokens: 7 }), stepStarted(2), rootReply(2, { input_tokens: 9 }), stepStarted(2)));
    expect(log.active!.steps[1].reply?.inputTokens).toBe(9);
    log.applyMessage(events(stepStarted(3, 'human'), stepFinished(3)));
    expect(log.active!.steps[2].reply).toBeNull();
    expect(stepTooltip(log.active!.steps[2], 3, 'human')).toContain('RLM step 3 (run by you)');
  });
});

describe('warnings and the reply being written', () => {
  it('keeps warnings and counts the root reply as it streams', () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage({ type: 'root_progress', run_id: 'r1', turn: 1, tokens: 37 });
    expect(log.get('r1')!.writing).toBe(37);
    log.applyMessage(events(rootReply(1), ev('warning', { code: 'no_code', text: 'The answer was given without running any code on the context.' })));
    const run = log.get('r1')!;
    expect(run.writing).toBe(0);
    expect(run.warnings).toEqual(['The answer was given without running any code on the context.']);
  });

  it('keeps each answer sent back to the root, with why, apart from the warnings', () => {
    const log = new RunLog();
    log.applyMessage(started());
    const doubted = { content: '7', source: 'FINAL', reason: 'the printed output never shows 7', by: 'check' } as const;
    log.applyMessage(events(rootReply(1), ev('answer_doubted', doubted)));
    log.applyMessage(events({ ...ev('answer_doubted', doubted), run_id: 'child', depth: 1, parent_id: 'r1' }));
    const run = log.get('r1')!;
    expect(run.sentBack).toEqual(['"7": the printed output never shows 7']);
    expect(run.warnings).toEqual([]);
  });

  it('shows an empty answer as an error, not as done', () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(runEnded('  ', 'The answer is empty: the root finished without content.')));
    expect(log.get('r1')!.status).toBe('error');
  });
});

describe('tool calls', () => {
  function toolCall(callId: string | null, tool: string, args: string, extra: Record<string, unknown> = {}) {
    return ev('tool_call', { call_id: callId, step: 1, tool, arguments: args, result_chars: 24, result_preview: '', latency_s: 0.25, error: null, ...extra });
  }

  it("go under the sub-call whose model asked for them, or the step whose code called them", () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(
      events(
        stepStarted(1),
        toolCall(null, 'list_files', '{"args": ["a"], "kwargs": {}}'),
        callStarted('c1', 1),
        callStarted('c2', 1),
        toolCall('c1', 'list_files', '{}'),
        toolCall('c1', 'open_file', '{"name": "a.txt"}', { result_preview: 'The launch is on 12 May.' }),
        toolCall('c1', 'open_file', '{"name": "nope"}', { error: "KeyError: 'nope'", result_chars: 0 }),
        callFinished('c1', 1),
        callFinished('c2', 1)
      )
    );
    const run = log.active!;
    const [c1, c2] = run.steps[0].calls;
    expect(c1.tools.map(t => [t.tool, t.byCode, t.error])).toEqual([
      ['list_files', false, null],
      ['open_file', false, null],
      ['open_file', false, "KeyError: 'nope'"]
    ]);
    expect(c1.tools[1]).toMatchObject({ resultChars: 24, resultPreview: 'The launch is on 12 May.', latencyS: 0.25 });
    expect(c2.tools).toEqual([]);
    expect(run.steps[0].tools.map(t => [t.tool, t.byCode])).toEqual([['list_files', true]]);
    expect(stepTools(run.steps[0])).toHaveLength(4);
    expect(run.toolCalls).toBe(4);
    expect(run.totals.calls).toBe(2); // a tool call is no LM call
    expect(stepTooltip(run.steps[0], 1, 'root')).toContain('4 tool calls: list_files × 2, open_file × 2');
  });

  it("of a child run go under its call, or the parent step that started it", () => {
    const log = new RunLog();
    log.applyMessage(started());
    const child = { run_id: 'child', parent_id: 'r1', depth: 1 };
    log.applyMessage(
      events(
        stepStarted(1),
        callStarted('c1', 1, { call_kind: 'rlm', model: 'rlm' }),
        ev('run_started', { ...child, question: null, context_meta: {}, model: 'm', sub_model: 'm', settings: {}, prompt: [], parent_call_id: 'c1' }),
        stepStarted(3, 'root', child),
        toolCall(null, 'list_files', '{}', { ...child, step: 3 }),
        callStarted('k1', 3, child),
        toolCall('k1', 'open_file', '{"name": "a.txt"}', { ...child, step: 3 })
      )
    );
    const step = log.active!.steps[0];
    expect(log.active!.steps).toHaveLength(1); // the child's step 3 is not the parent's
    expect(step.tools.map(t => [t.tool, t.depth])).toEqual([['list_files', 1]]);
    expect(step.calls.find(c => c.callId === 'k1')!.tools.map(t => t.tool)).toEqual(['open_file']);
  });

  it('arrive from the kernel with the fields it may leave out', () => {
    const log = replay([
      { type: 'run_started', run_id: 'r1', cell_id: 'rlm-cell', mode: 'auto', question: 'q', model: 'm' },
      {
        type: 'events',
        run_id: 'r1',
        events: [
          { kind: 'step_started', run_id: 'r1', ts: 1, step: 1, code: 'x = 1', author: 'root' },
          { kind: 'tool_call', run_id: 'r1', ts: 2, call_id: null, step: 1, tool: 'list_files', arguments: '{}' }
        ]
      }
    ]);
    expect(log.get('r1')!.steps[0].tools).toEqual([
      { tool: 'list_files', arguments: '{}', resultChars: 0, resultPreview: '', latencyS: 0, error: null, depth: 0, byCode: true }
    ]);
  });

  it('number a human cell that ran while a step waited as that step, and the step the next', () => {
    const log = new RunLog();
    log.applyMessage(started('r1', 'step'));
    log.applyMessage(events(rootReply(1), stepStarted(1)));
    log.bindCell('r1', 1, 'proposal');
    expect(log.cellRun('mine', 'print(1)')).toBe('human');
    log.applyMessage(events(stepStarted(1, 'human', { code: 'print(1)' }), stepFinished(1), stepStarted(2, 'root', { code: 'code 1' })));
    const [one, two] = log.get('r1')!.steps;
    expect([one.step, one.author, one.cellId, one.status]).toEqual([1, 'human', 'mine', 'done']);
    expect([two.step, two.author, two.cellId, two.status, two.code]).toEqual([2, 'root', 'proposal', 'waiting', 'code 1']);
    expect(two.reply).not.toBeNull();
    expect(log.stepOfCell('proposal')![1].step).toBe(2);
  });

  it('come back from a saved trajectory', () => {
    const log = new RunLog();
    log.applySaved([
      ev('run_started', { run_id: 's1', question: 'q', context_meta: {}, model: 'm', sub_model: 'm', settings: {}, prompt: [] }),
      stepStarted(1, 'root', { run_id: 's1' }),
      callStarted('c1', 1, { run_id: 's1' }),
      toolCall('c1', 'open_file', '{"name": "a.txt"}', { run_id: 's1' }),
      callFinished('c1', 1, { run_id: 's1' })
    ]);
    expect(log.get('s1')!.steps[0].calls[0].tools.map(t => t.tool)).toEqual(['open_file']);
    expect(log.get('s1')!.toolCalls).toBe(1);
  });

  it('read in short: the arguments as the call wrote them, what it gave, which tools', () => {
    const tool = (name: string, args: string, extra: Partial<ToolView> = {}): ToolView => ({
      tool: name,
      arguments: args,
      resultChars: 24,
      resultPreview: '',
      latencyS: 0.25,
      error: null,
      depth: 0,
      byCode: false,
      ...extra
    });
    expect(toolCallText(tool('open_file', '{"name": "b.txt", "start": 8}'))).toBe('open_file(name="b.txt", start=8)');
    expect(toolCallText(tool('f', '{"args": ["a", 2], "kwargs": {"k": null}}', { byCode: true }))).toBe('f("a", 2, k=null)');
    expect(toolCallText(tool('f', '{"args": 1, "kwargs": {}}'))).toBe('f(args=1, kwargs={})'); // a model's own
    expect(toolCallText(tool('g', ''))).toBe('g()');
    const cut = toolCallText(tool('q', `{"text": "${'x'.repeat(500)}`)); // cut by the kernel: not JSON
    expect(cut.startsWith('q({"text": "xxx') && cut.endsWith('…)')).toBe(true);
    expect(cut).toHaveLength('q()'.length + 60);
    expect(toolOutcome(tool('a', '{}', { resultChars: 12_345 }))).toBe('12.3k chars · 0.25 s');
    expect(toolOutcome(tool('a', '{}', { error: "KeyError: 'x'" }))).toBe("✗ KeyError: 'x' · 0.25 s");
    expect(toolNames([tool('b', ''), tool('a', ''), tool('b', '')])).toBe('b × 2, a');
  });
});

describe('the images a sub-call sent', () => {
  const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==';

  it('keep their size and format, and a thumbnail only as a PNG data URL of plain base64', () => {
    const log = new RunLog();
    log.applyMessage(started());
    log.applyMessage(events(stepStarted(1)));
    log.applyEvent(
      callStarted('c1', 1, {
        images: [
          { media_type: 'image/png', width: 640, height: 480, bytes: 12345, thumbnail: png },
          { media_type: 'image/jpeg', width: 30, height: 20, bytes: 900 },
          { media_type: 'image/svg+xml', width: 1, height: 1, bytes: 5, thumbnail: 'data:image/svg+xml;base64,PHN2Zz4=' },
          { media_type: 'image/png', width: 1, height: 1, bytes: 5, thumbnail: 'https://example.com/x.png' },
          { media_type: 'image/png', width: 1, height: 1, bytes: 5, thumbnail: 'javascript:alert(1)//base64,AA' },
          'not a record'
        ]
      })
    );
    const call = log.runs[0].steps[0].calls[0];
    expect(call.images.map(i => i.about)).toEqual([
      'PNG 640×480, 12,345 bytes',
      'JPEG 30×20, 900 bytes',
      'SVG+XML 1×1, 5 bytes',
      'PNG 1×1, 5 bytes',
      'PNG 1×1, 5 bytes',
      'IMAGE ?×?, 0 bytes'
    ]);
    expect(call.images.map(i => i.thumbnail)).toEqual([png, null, null, null, null, null]);
  });
});
