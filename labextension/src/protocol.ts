/**
 * The notebook-mode comm protocol, version 1 (docs/protocol.md), as TypeScript types.
 *
 * The event shapes mirror `rlm_kernel/events.py` (their JSON form, `Event.to_dict`); the
 * messages mirror `rlm_kernel/jupyter/notebook.py`. This module is pure: no JupyterLab imports,
 * so jest tests it directly.
 */

export const COMM_TARGET = 'rlm_kernel';
export const PROTOCOL_VERSION = 1;
/** The kernelspec name of the RLM Python kernel. */
export const KERNEL_NAME = 'rlm-python';
/** Output metadata key under which a finished run keeps its events (rlm_kernel/trajectory.py). */
export const TRAJECTORY_KEY = 'rlm_kernel';

export type Mode = 'auto' | 'step';
export type Author = 'root' | 'human';

// -- events -----------------------------------------------------------------------------------

/** Fields every event carries. */
export interface EventBase {
  run_id: string;
  parent_id: string | null;
  depth: number;
  ts: number;
}

export interface RunStartedEvent extends EventBase {
  kind: 'run_started';
  question: string | null;
  context_meta: Record<string, unknown>;
  model: string;
  sub_model: string;
  settings: Record<string, unknown>;
  prompt: Array<Record<string, unknown>>;
}

export interface RootRequestEvent extends EventBase {
  kind: 'root_request';
  turn: number;
  messages: number;
  chars: number;
  content: string;
  final_turn: boolean;
}

export interface RootReplyEvent extends EventBase {
  kind: 'root_reply';
  turn: number;
  text: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  latency_s: number;
  cost: number | null;
}

export interface StepStartedEvent extends EventBase {
  kind: 'step_started';
  step: number;
  code: string;
  author: Author;
}

export interface StepFinishedEvent extends EventBase {
  kind: 'step_finished';
  step: number;
  output: string;
  error: string | null;
  elapsed_s: number;
  cut_chars: number;
  restored: string[];
}

export interface SubcallStartedEvent extends EventBase {
  kind: 'subcall_started';
  call_id: string;
  step: number | null;
  model: string;
  prompt_preview: string;
  prompt_chars: number;
  batch_id: string | null;
  batch_size: number;
  call_kind: 'llm' | 'rlm';
}

export interface SubcallFinishedEvent extends EventBase {
  kind: 'subcall_finished';
  call_id: string;
  step: number | null;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  latency_s: number;
  cost: number | null;
  error: string | null;
  response_preview: string;
  batch_id: string | null;
  call_kind: 'llm' | 'rlm';
}

export interface AnswerSetEvent extends EventBase {
  kind: 'answer_set';
  content: string;
  source: 'answer' | 'FINAL' | 'FINAL_VAR' | 'final_turn';
}

export interface HumanEditEvent extends EventBase {
  kind: 'human_edit';
  step: number;
  proposed: string;
  executed: string;
}

export interface HintEvent extends EventBase {
  kind: 'hint';
  text: string;
}

/** Something a reader of the result should know that did not stop the run. */
export interface WarningEvent extends EventBase {
  kind: 'warning';
  code: 'no_code' | 'after_error' | 'repetition' | 'reply_cut';
  text: string;
}

export interface RunEndedEvent extends EventBase {
  kind: 'run_ended';
  response: string | null;
  error: string | null;
  iterations: number;
  elapsed_s: number;
}

export type RLMEvent =
  | RunStartedEvent
  | RootRequestEvent
  | RootReplyEvent
  | StepStartedEvent
  | StepFinishedEvent
  | SubcallStartedEvent
  | SubcallFinishedEvent
  | AnswerSetEvent
  | HumanEditEvent
  | HintEvent
  | WarningEvent
  | RunEndedEvent;

export type EventKind = RLMEvent['kind'];


// -- kernel → front end -----------------------------------------------------------------------

export interface WelcomeMsg {
  type: 'welcome';
  version: number;
  active: string | null;
}

export interface RunStartedMsg {
  type: 'run_started';
  run_id: string;
  cell_id: string | null;
  mode: Mode;
  question: string | null;
  model: string;
}

export interface ProposeStepMsg {
  type: 'propose_step';
  run_id: string;
  step: number;
  code: string;
  reply: string;
  after_cell_id: string | null;
  mode: Mode;
}

export interface StepExecutedMsg {
  type: 'step_executed';
  run_id: string;
  step: number;
  cell_id: string;
  edited: boolean;
  error: boolean;
}

export interface RunStateMsg {
  type: 'run_state';
  run_id: string;
  mode: Mode;
  paused: boolean;
  waiting_for: number | null;
}

export interface EventsMsg {
  type: 'events';
  run_id: string;
  events: RLMEvent[];
}

/** The root LM is writing its reply: how many pieces (about tokens) have come so far. */
export interface RootProgressMsg {
  type: 'root_progress';
  run_id: string;
  turn: number;
  tokens: number;
}

export interface RunFinishedMsg {
  type: 'run_finished';
  run_id: string;
  answer: string | null;
  /** The answer as safe Markdown for a cell (rlm_kernel/jupyter/safe.py); null without one. */
  answer_markdown: string | null;
  error: string | null;
  after_cell_id: string | null;
  usage: string;
}

export type KernelMsg =
  | WelcomeMsg
  | RunStartedMsg
  | ProposeStepMsg
  | StepExecutedMsg
  | RunStateMsg
  | EventsMsg
  | RootProgressMsg
  | RunFinishedMsg;

// -- front end → kernel -----------------------------------------------------------------------

export interface OpenData {
  frontend: 'jupyterlab';
  version: number;
}

export type FrontendMsg =
  | { type: 'cell_inserted'; run_id: string; step: number; cell_id: string }
  | { type: 'set_mode'; run_id: string; mode: Mode }
  | { type: 'pause'; run_id: string }
  | { type: 'resume'; run_id: string }
  | { type: 'stop'; run_id: string }
  | { type: 'hint'; run_id: string; text: string };

export function openData(): OpenData {
  return { frontend: 'jupyterlab', version: PROTOCOL_VERSION };
}

// -- cell metadata ----------------------------------------------------------------------------

/** `metadata.rlm` of a cell the extension inserted. */
export interface StepCellMeta {
  run_id: string;
  step: number;
  author: 'root' | 'human-edited';
  proposed: string;
  reply?: string;
}

export interface AnswerCellMeta {
  run_id: string;
  answer: true;
  error?: boolean;
}

export type RlmCellMeta = StepCellMeta | AnswerCellMeta;

// -- parsing: the kernel's data is JSON from another process, so check before trusting it ------

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const str = (v: unknown): v is string => typeof v === 'string';
const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const strOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';
const numOrNull = (v: unknown): v is number | null => v === null || num(v);
const isMode = (v: unknown): v is Mode => v === 'auto' || v === 'step';
const isCallKind = (v: unknown): boolean => v === 'llm' || v === 'rlm';

/**
 * The fields of each event kind that the run log reads, with their types. Events come from a live
 * kernel or from a notebook's metadata that anyone may have written, so each is checked whole
 * before it is folded: a wrong type would otherwise break the panel for that notebook.
 */
const EVENT_FIELDS: { [K in EventKind]: Record<string, (v: unknown) => boolean> } = {
  run_started: { question: strOrNull, model: str, sub_model: str },
  root_request: { turn: num },
  root_reply: {
    turn: num,
    text: str,
    model: str,
    input_tokens: num,
    output_tokens: num,
    cached_tokens: num,
    latency_s: num,
    cost: numOrNull
  },
  step_started: { step: num, code: str, author: v => v === 'root' || v === 'human' },
  step_finished: { step: num, output: str, error: strOrNull, elapsed_s: num },
  subcall_started: {
    call_id: str,
    step: numOrNull,
    model: str,
    prompt_preview: str,
    batch_id: strOrNull,
    call_kind: isCallKind
  },
  subcall_finished: {
    call_id: str,
    step: numOrNull,
    model: str,
    input_tokens: num,
    output_tokens: num,
    cached_tokens: num,
    latency_s: num,
    cost: numOrNull,
    error: strOrNull,
    response_preview: str,
    batch_id: strOrNull,
    call_kind: isCallKind
  },
  answer_set: { content: str },
  human_edit: { step: num },
  hint: { text: str },
  warning: { code: str, text: str },
  run_ended: { response: strOrNull, error: strOrNull, elapsed_s: num }
};
const EVENT_BASE: Record<string, (v: unknown) => boolean> = {
  run_id: str,
  parent_id: strOrNull,
  depth: num,
  ts: num
};

/** Each known message type, with the fields a handler relies on. */
const REQUIRED: { [K in KernelMsg['type']]: (d: Json) => boolean } = {
  welcome: d => num(d.version) && (d.active === undefined || strOrNull(d.active)),
  run_started: d => str(d.run_id) && (d.cell_id === undefined || strOrNull(d.cell_id)),
  propose_step: d =>
    str(d.run_id) && num(d.step) && str(d.code) && (d.after_cell_id === undefined || strOrNull(d.after_cell_id)),
  step_executed: d => str(d.run_id) && num(d.step),
  run_state: d => str(d.run_id) && isMode(d.mode) && typeof d.paused === 'boolean',
  events: d => str(d.run_id) && Array.isArray(d.events),
  root_progress: d => str(d.run_id) && num(d.turn) && num(d.tokens),
  run_finished: d => str(d.run_id) && strOrNull(d.answer ?? null) && strOrNull(d.error ?? null)
};

/**
 * The message if it is one this front end understands, else null: unknown types are ignored
 * (docs/protocol.md, "Versioning"), and so are known types missing a field a handler needs.
 */
export function parseKernelMsg(data: unknown): KernelMsg | null {
  if (!isObject(data) || !str(data.type)) {
    return null;
  }
  const check = (REQUIRED as Record<string, ((d: Json) => boolean) | undefined>)[data.type];
  if (check === undefined || !check(data)) {
    return null;
  }
  const msg: Json = { ...data };
  // Defaults for the optional parts, so handlers need not repeat them.
  switch (data.type) {
    case 'welcome':
      msg.active = data.active ?? null;
      break;
    case 'run_started':
      msg.cell_id = data.cell_id ?? null;
      msg.mode = isMode(data.mode) ? data.mode : 'auto';
      msg.question = str(data.question) ? data.question : null;
      msg.model = str(data.model) ? data.model : '';
      break;
    case 'propose_step':
      msg.after_cell_id = data.after_cell_id ?? null;
      msg.reply = str(data.reply) ? data.reply : '';
      msg.mode = isMode(data.mode) ? data.mode : 'auto';
      break;
    case 'step_executed':
      msg.cell_id = str(data.cell_id) ? data.cell_id : '';
      msg.edited = data.edited === true;
      msg.error = data.error === true;
      break;
    case 'run_state':
      msg.waiting_for = num(data.waiting_for) ? data.waiting_for : null;
      break;
    case 'events':
      msg.events = (data.events as unknown[]).filter(isEvent);
      break;
    case 'run_finished':
      msg.answer = data.answer ?? null;
      msg.answer_markdown = str(data.answer_markdown) && data.answer !== null ? data.answer_markdown : null;
      msg.error = data.error ?? null;
      msg.after_cell_id = str(data.after_cell_id) ? data.after_cell_id : null;
      msg.usage = str(data.usage) ? data.usage : '';
      break;
  }
  return msg as unknown as KernelMsg;
}

/** Whether a value is a well-formed event of a kind this front end knows (others are skipped). */
export function isEvent(value: unknown): value is RLMEvent {
  if (!isObject(value) || !str(value.kind) || !Object.hasOwn(EVENT_FIELDS, value.kind)) {
    return false;
  }
  const fields = { ...EVENT_BASE, ...EVENT_FIELDS[value.kind as EventKind] };
  return Object.entries(fields).every(([name, check]) => check(value[name]));
}

/** `metadata.rlm` of a cell, if it is one of ours. */
export function readCellMeta(value: unknown): RlmCellMeta | null {
  if (!isObject(value) || !str(value.run_id)) {
    return null;
  }
  if (value.answer === true) {
    return value as unknown as AnswerCellMeta;
  }
  if (num(value.step)) {
    return value as unknown as StepCellMeta;
  }
  return null;
}

/** The events a finished run kept in its `%%rlm` cell's output metadata, if this output has them. */
export function savedEvents(outputMetadata: unknown): RLMEvent[] {
  if (!isObject(outputMetadata)) {
    return [];
  }
  const kept = outputMetadata[TRAJECTORY_KEY];
  if (!isObject(kept) || !Array.isArray(kept.events)) {
    return [];
  }
  return kept.events.filter(isEvent);
}
