/**
 * The notebook-mode comm protocol (docs/protocol.md): reading what the kernel sends.
 *
 * The types and the field tables come from `schema.ts`, generated from `rlm_kernel/messages.py`
 * and `rlm_kernel/events.py`; every message and event is checked against them before it is
 * trusted. This module is pure: no JupyterLab imports, so jest tests it directly.
 */

import {
  EVENT_BASE,
  EVENT_FIELDS,
  KERNEL_FIELDS,
  MODES,
  PROTOCOL_VERSION,
  SAVED_RUN_KEY,
  SAVED_RUN_VERSION,
  type EventKind,
  type FieldSpec,
  type KernelMsg,
  type Mode,
  type RLMEvent
} from './schema';

export * from './schema';

/** The kernelspec name of the RLM Python kernel. */
export const KERNEL_NAME = 'rlm-python';
/** Output metadata key under which a finished run keeps its events (rlm_kernel/trajectory.py). */
export const TRAJECTORY_KEY = SAVED_RUN_KEY;

export type Author = 'root' | 'human';

export interface OpenData {
  frontend: 'jupyterlab';
  version: number;
}

export function openData(): OpenData {
  return { frontend: 'jupyterlab', version: PROTOCOL_VERSION };
}

/** One line for the notebook when the kernel speaks another protocol, else null. */
export function versionProblem(kernelVersion: number): string | null {
  return kernelVersion === PROTOCOL_VERSION
    ? null
    : `The kernel speaks protocol ${kernelVersion}, the extension ${PROTOCOL_VERSION}: reinstall rlm-kernel ` +
        '(pip install -U rlm-kernel) and restart the kernel. Steps stay in the %%rlm cell until then.';
}

// -- cell metadata ----------------------------------------------------------------------------

/** `metadata.rlm` of a cell the extension inserted for a proposed step. */
export interface StepCellMeta {
  run_id: string;
  step: number;
  author: 'root' | 'human-edited';
  proposed: string;
  reply?: string;
  reason?: string; // why the step waited for the human (confirm-risky)
  /** The code the cell kept when the human rejected a new proposal (Regenerate): run as it is,
   * it is recorded as an edit of that proposal, though the human typed nothing. */
  kept?: string;
}

/** `metadata.rlm` of a cell the human ran during a run: a human step. */
export interface HumanCellMeta {
  run_id: string;
  step: number;
  author: 'human';
}

export interface AnswerCellMeta {
  run_id: string;
  answer: true;
  error?: boolean;
}

export type RlmCellMeta = StepCellMeta | HumanCellMeta | AnswerCellMeta;

// -- parsing: the kernel's data is JSON from another process, so check before trusting it ------

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const str = (v: unknown): v is string => typeof v === 'string';
const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function jsonType(value: unknown): string {
  if (value === null) {
    return 'null';
  }
  if (Array.isArray(value)) {
    return 'array';
  }
  if (typeof value === 'number') {
    return Number.isFinite(value) ? 'number' : 'invalid';
  }
  return typeof value;
}

/** Whether a value fits a field of the generated schema (schema.ts). */
function fits(value: unknown, spec: FieldSpec): boolean {
  if (spec.values !== undefined) {
    return spec.values.includes(value) || (value === null && spec.types.includes('null'));
  }
  return spec.types.includes(jsonType(value));
}

/**
 * The object with every field of ``fields`` checked, or null. An optional field (one with a
 * default) that is missing gets its default; so does an ill-typed one when ``lenient`` (a message
 * still does its job), while an ill-typed event is dropped whole. Fields the schema does not know
 * are kept (a newer kernel may send more).
 */
function checked(data: Json, fields: Record<string, FieldSpec>, lenient = false): Json | null {
  const out: Json = { ...data };
  for (const [name, spec] of Object.entries(fields)) {
    const present = Object.hasOwn(data, name) && data[name] !== undefined;
    if (present && fits(data[name], spec)) {
      continue;
    }
    if (!Object.hasOwn(spec, 'default') || (present && !lenient)) {
      return null;
    }
    out[name] = spec.default;
  }
  return out;
}

/**
 * The message if it is one this front end understands, with every field well typed; else null.
 * Unknown types are ignored (docs/protocol.md, "Versioning").
 */
export function parseKernelMsg(data: unknown): KernelMsg | null {
  if (!isObject(data) || !str(data.type) || !Object.hasOwn(KERNEL_FIELDS, data.type)) {
    return null;
  }
  const msg = checked(data, KERNEL_FIELDS[data.type as KernelMsg['type']], true);
  if (msg === null) {
    return null;
  }
  if (msg.type === 'events') {
    msg.events = (msg.events as unknown[]).filter(isEvent).map(withDefaults);
  }
  if (msg.type === 'run_finished' && msg.answer === null) {
    msg.answer_markdown = null;
  }
  return msg as unknown as KernelMsg;
}

/** Whether a value is a well-formed event of a kind this front end knows (others are skipped). */
export function isEvent(value: unknown): value is RLMEvent {
  if (!isObject(value) || !str(value.kind) || !Object.hasOwn(EVENT_FIELDS, value.kind)) {
    return false;
  }
  return checked(value, { ...EVENT_BASE, ...EVENT_FIELDS[value.kind as EventKind] }) !== null;
}

/** The event with the defaults of fields an older kernel did not send filled in. */
export function withDefaults(event: RLMEvent): RLMEvent {
  const fields = { ...EVENT_BASE, ...EVENT_FIELDS[event.kind] };
  return (checked(event as unknown as Json, fields) ?? event) as unknown as RLMEvent;
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
    return value.author === 'human' ? (value as unknown as HumanCellMeta) : (value as unknown as StepCellMeta);
  }
  return null;
}

/** Whether the metadata is a proposed step's (the root's, perhaps edited), not a human step's. */
export function isProposedMeta(meta: RlmCellMeta | null): meta is StepCellMeta {
  return meta !== null && 'step' in meta && meta.author !== 'human';
}

/** A saved run's record, if this output has one this extension can read (its version or older). */
function savedRun(outputMetadata: unknown): Json | null {
  const kept = isObject(outputMetadata) ? outputMetadata[TRAJECTORY_KEY] : null;
  return isObject(kept) && savedRunProblem(outputMetadata) === null ? kept : null;
}

/** One line when the output keeps a run saved by a newer kernel than this extension reads, else null. */
export function savedRunProblem(outputMetadata: unknown): string | null {
  const kept = isObject(outputMetadata) ? outputMetadata[TRAJECTORY_KEY] : null;
  const version = isObject(kept) ? kept.version : null;
  return typeof version === 'number' && version > SAVED_RUN_VERSION
    ? `This run was saved by a newer rlm-kernel (record version ${version}; this one reads ` +
        `up to ${SAVED_RUN_VERSION}): upgrade rlm-kernel to read it.`
    : null;
}

/** The events a finished run kept in its `%%rlm` cell's output metadata, if this output has them. */
export function savedEvents(outputMetadata: unknown): RLMEvent[] {
  const kept = savedRun(outputMetadata);
  if (kept === null || !Array.isArray(kept.events)) {
    return [];
  }
  return kept.events.filter(isEvent).map(withDefaults);
}

/** The mode a saved run ended in (notebook mode keeps it beside the events), or null. */
export function savedMode(outputMetadata: unknown): Mode | null {
  const mode = savedRun(outputMetadata)?.mode;
  return (MODES as readonly unknown[]).includes(mode) ? (mode as Mode) : null;
}
