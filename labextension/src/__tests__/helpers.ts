/** Event and message builders for the tests: the fields the kernel always sends, overridable. */

import type { KernelMsg, RLMEvent } from '../protocol';

/** An event's own fields; those with a default on the wire (schema.ts) may be left out. */
type Fields<K extends RLMEvent['kind']> = Partial<Omit<Extract<RLMEvent, { kind: K }>, 'kind'>>;

export function ev<K extends RLMEvent['kind']>(kind: K, fields: Fields<K>): Extract<RLMEvent, { kind: K }> {
  return { run_id: 'r1', parent_id: null, depth: 0, ts: 0, kind, ...fields } as unknown as Extract<
    RLMEvent,
    { kind: K }
  >;
}

export function callStarted(callId: string, step: number | null, extra: Partial<Fields<'subcall_started'>> = {}) {
  return ev('subcall_started', {
    call_id: callId,
    step,
    model: 'gpt-4o-mini',
    prompt_preview: `prompt ${callId}`,
    prompt_chars: 10,
    batch_id: null,
    batch_size: 1,
    call_kind: 'llm',
    ...extra
  });
}

export function callFinished(callId: string, step: number | null, extra: Partial<Fields<'subcall_finished'>> = {}) {
  return ev('subcall_finished', {
    call_id: callId,
    step,
    model: 'gpt-4o-mini',
    input_tokens: 100,
    output_tokens: 10,
    cached_tokens: 0,
    latency_s: 0.5,
    cost: 0.001,
    error: null,
    response_preview: 'ok',
    batch_id: null,
    call_kind: 'llm',
    ...extra
  });
}

export function rootReply(turn: number, extra: Partial<Fields<'root_reply'>> = {}) {
  return ev('root_reply', {
    turn,
    text: 'reply',
    model: 'gpt-4o-mini',
    input_tokens: 1000,
    output_tokens: 50,
    cached_tokens: 0,
    latency_s: 1,
    cost: 0.01,
    ...extra
  });
}

export function stepStarted(step: number, author: 'root' | 'human' = 'root', extra: Partial<Fields<'step_started'>> = {}) {
  return ev('step_started', { step, code: `code ${step}`, author, ...extra });
}

export function stepFinished(step: number, error: string | null = null) {
  return ev('step_finished', { step, output: '', error, elapsed_s: 0.1, cut_chars: 0, restored: [] });
}

export function runEnded(response: string | null, error: string | null = null, extra: Partial<Fields<'run_ended'>> = {}) {
  return ev('run_ended', { response, error, stop: error === null ? 'answer' : 'error', iterations: 1, elapsed_s: 2, ...extra });
}

export function started(runId = 'r1', mode: 'auto' | 'step' = 'auto'): KernelMsg {
  return { type: 'run_started', run_id: runId, cell_id: 'rlm-cell', mode, question: 'q?', model: 'gpt-4o-mini' };
}

export function events(...list: RLMEvent[]): KernelMsg {
  return { type: 'events', run_id: list[0]?.run_id ?? 'r1', events: list };
}
