import {
  PROTOCOL_VERSION,
  isEvent,
  isProposedMeta,
  openData,
  parseKernelMsg,
  readCellMeta,
  SAVED_RUN_VERSION,
  savedEvents,
  savedMode,
  savedRunProblem,
  versionProblem
} from '../protocol';
import recorded from './fixtures/kernel_run.json';

describe('parseKernelMsg', () => {
  it('accepts every message a real kernel sent, events included', () => {
    for (const data of recorded as unknown[]) {
      const msg = parseKernelMsg(data);
      expect(msg).not.toBeNull();
      if (msg?.type === 'events') {
        expect(msg.events).toHaveLength((data as { events: unknown[] }).events.length);
      }
    }
  });

  it.each([
    ['not an object', 'welcome'],
    ['no type', { version: 1 }],
    ['an unknown type (ignored, as versioning says)', { type: 'future_thing', run_id: 'r' }],
    ['propose_step without code', { type: 'propose_step', run_id: 'r', step: 1 }],
    ['propose_step with a string step', { type: 'propose_step', run_id: 'r', step: '1', code: 'x' }],
    ['run_state with an unknown mode', { type: 'run_state', run_id: 'r', mode: 'turbo', paused: false }],
    ['events that are not a list', { type: 'events', run_id: 'r', events: {} }]
  ])('drops %s', (_, data) => {
    expect(parseKernelMsg(data)).toBeNull();
  });

  it('fills optional fields, and ignores fields it does not know', () => {
    expect(parseKernelMsg({ type: 'propose_step', run_id: 'r', step: 2, code: 'x', extra: 1 })).toMatchObject({
      after_cell_id: null,
      reply: '',
      mode: 'auto'
    });
    expect(parseKernelMsg({ type: 'run_finished', run_id: 'r' })).toEqual({
      type: 'run_finished',
      run_id: 'r',
      answer: null,
      answer_markdown: null,
      error: null,
      stop: 'answer',
      after_cell_id: null,
      usage: ''
    });
    expect(parseKernelMsg({ type: 'welcome', version: 1 })).toEqual({ type: 'welcome', version: 1, active: null });
    expect(parseKernelMsg({ type: 'step_executed', run_id: 'r', step: 1 })).toMatchObject({
      cell_id: '',
      edited: false,
      error: false
    });
  });

  it('skips events of kinds it does not know', () => {
    const msg = parseKernelMsg({
      type: 'events',
      run_id: 'r',
      events: [
        { kind: 'root_token', run_id: 'r' },
        { kind: 'hint', run_id: 'r', parent_id: null, depth: 0, ts: 1, text: 'x' },
        null
      ]
    });
    expect(msg?.type === 'events' && msg.events.map(e => e.kind)).toEqual(['hint']);
  });
});

describe('cell metadata and saved trajectories', () => {
  it('reads our cells, and only ours', () => {
    expect(readCellMeta({ run_id: 'r', step: 1, author: 'root', proposed: 'x' })).toMatchObject({ step: 1 });
    expect(readCellMeta({ run_id: 'r', answer: true })).toMatchObject({ answer: true });
    expect(readCellMeta({ run_id: 'r' })).toBeNull();
    expect(readCellMeta(undefined)).toBeNull();
    expect(readCellMeta({ step: 1 })).toBeNull();
  });

  it("tells a human step's cell from a proposed step's", () => {
    const human = readCellMeta({ run_id: 'r', step: 2, author: 'human' });
    expect(human).toEqual({ run_id: 'r', step: 2, author: 'human' });
    expect(isProposedMeta(human)).toBe(false);
    expect(isProposedMeta(readCellMeta({ run_id: 'r', step: 1, author: 'human-edited', proposed: 'x' }))).toBe(true);
    expect(isProposedMeta(readCellMeta({ run_id: 'r', answer: true }))).toBe(false);
  });

  it('reads the mode a saved run ended in, when kept', () => {
    expect(savedMode({ rlm_kernel: { version: 1, events: [], mode: 'step' } })).toBe('step');
    expect(savedMode({ rlm_kernel: { version: 1, events: [] } })).toBeNull();
    expect(savedMode({ rlm_kernel: { events: [], mode: 'sideways' } })).toBeNull();
    expect(savedMode(undefined)).toBeNull();
  });

  it("finds the events kept in a %%rlm cell's output metadata", () => {
    const events = [{ kind: 'hint', run_id: 'r', parent_id: null, depth: 0, ts: 0, text: 'x' }];
    expect(savedEvents({ rlm_kernel: { version: 1, events } })).toEqual(events);
    expect(savedEvents({ other: 1 })).toEqual([]);
    expect(savedEvents(undefined)).toEqual([]);
    expect(isEvent(events[0])).toBe(true);
  });

  it('reads a saved run of its version or older, and names a newer one in one line', () => {
    const events = [{ kind: 'hint', run_id: 'r', parent_id: null, depth: 0, ts: 0, text: 'x' }];
    expect(savedEvents({ rlm_kernel: { events } })).toEqual(events);
    expect(savedRunProblem({ rlm_kernel: { version: SAVED_RUN_VERSION, events } })).toBeNull();
    const newer = { rlm_kernel: { version: SAVED_RUN_VERSION + 1, events, mode: 'step' } };
    expect(savedEvents(newer)).toEqual([]);
    expect(savedMode(newer)).toBeNull();
    expect(savedRunProblem(newer)).toMatch(/^This run was saved by a newer rlm-kernel .*upgrade rlm-kernel to read it\.$/);
  });

  it('opens with the front end and version the kernel expects', () => {
    expect(openData()).toEqual({ frontend: 'jupyterlab', version: PROTOCOL_VERSION });
    expect(PROTOCOL_VERSION).toBe(3);
    expect(versionProblem(PROTOCOL_VERSION)).toBeNull();
    expect(versionProblem(4)).toBe(
      'The kernel speaks protocol 4, the extension 3: reinstall rlm-kernel (pip install -U rlm-kernel) and ' +
        'restart the kernel. Steps stay in the %%rlm cell until then.'
    );
  });
});
