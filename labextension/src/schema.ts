/**
 * The notebook-mode protocol, generated from rlm_kernel/messages.py and rlm_kernel/events.py:
 *
 *     python -m rlm_kernel.messages > labextension/src/schema.ts
 *
 * Do not edit: tests/unit/test_messages.py fails when this file and the Python disagree.
 */

export const PROTOCOL_VERSION = 3;
export const COMM_TARGET = 'rlm_kernel';

/** A finished run kept in its cell's output metadata: the key, and the record's version. */
export const SAVED_RUN_KEY = 'rlm_kernel';
export const SAVED_RUN_VERSION = 1;

/** The permission ladder, most autonomous first (a run's mode). */
export const MODES = ['auto', 'confirm-risky', 'step'] as const;
export type Mode = (typeof MODES)[number];

/** Why a run ended (RunEnded.stop): read this, never the error's text. */
export const STOP_REASONS = ['answer', 'max_iterations', 'empty', 'user', 'interrupt', 'budget', 'error'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/** A field on the wire: its JSON types, the values a literal may take, and its default
 * (a field with a default may be missing, from an older peer). */
export interface FieldSpec {
  types: string[];
  values?: unknown[];
  default?: unknown;
}

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
  parent_call_id: string | null;
  settings: Record<string, unknown>;
  prompt: unknown[];
  parent_run: string | null;
  branched_at: number | null;
  fixed: number;
  opening: string;
  session: string | null;
  follows: string | null;
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

export interface ProposalRejectedEvent extends EventBase {
  kind: 'proposal_rejected';
  step: number;
  turn: number;
  reply: string;
  added: string;
  sampling: Record<string, unknown> | null;
  rewound: boolean;
}

export interface CompactedEvent extends EventBase {
  kind: 'compacted';
  turn: number;
  first_turn: number;
  last_turn: number;
  tokens: number;
  window: number;
  summary: string;
  names: unknown[];
  messages: unknown[];
}

export interface StepStartedEvent extends EventBase {
  kind: 'step_started';
  step: number;
  code: string;
  author: 'root' | 'human';
  replayed: boolean;
}

export interface StepFinishedEvent extends EventBase {
  kind: 'step_finished';
  step: number;
  output: string;
  error: string | null;
  elapsed_s: number;
  cut_chars: number;
  restored: unknown[];
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
  prompt_key: string;
  images: unknown[];
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
  cancelled: boolean;
  response: string;
  replayed: boolean;
}

export interface ToolCalledEvent extends EventBase {
  kind: 'tool_call';
  call_id: string | null;
  step: number | null;
  tool: string;
  arguments: string;
  result_chars: number;
  result_preview: string;
  latency_s: number;
  error: string | null;
}

export interface AnswerSetEvent extends EventBase {
  kind: 'answer_set';
  content: string;
  source: 'answer' | 'FINAL' | 'FINAL_VAR' | 'final_turn';
}

export interface AnswerDoubtedEvent extends EventBase {
  kind: 'answer_doubted';
  content: string;
  source: 'answer' | 'FINAL' | 'FINAL_VAR';
  reason: string;
  by: 'check' | 'verify' | 'type';
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

export interface WarningEvent extends EventBase {
  kind: 'warning';
  code: 'no_code' | 'unseen' | 'after_error' | 'unsupported' | 'repetition' | 'reply_cut' | 'replay_diverged' | 'hint_unused' | 'compaction_failed' | 'subcall_split' | 'low_confidence';
  text: string;
}

export interface RunEndedEvent extends EventBase {
  kind: 'run_ended';
  response: string | null;
  error: string | null;
  iterations: number;
  elapsed_s: number;
  stop: 'answer' | 'max_iterations' | 'empty' | 'user' | 'interrupt' | 'budget' | 'error';
}

export interface VotedEvent extends EventBase {
  kind: 'voted';
  answer: string | null;
  clear: boolean;
  runs: unknown[];
  candidates: unknown[];
  input_tokens: number;
  output_tokens: number;
  cost: number | null;
}

export type RLMEvent =
  | RunStartedEvent
  | RootRequestEvent
  | RootReplyEvent
  | ProposalRejectedEvent
  | CompactedEvent
  | StepStartedEvent
  | StepFinishedEvent
  | SubcallStartedEvent
  | SubcallFinishedEvent
  | ToolCalledEvent
  | AnswerSetEvent
  | AnswerDoubtedEvent
  | HumanEditEvent
  | HintEvent
  | WarningEvent
  | RunEndedEvent
  | VotedEvent;

export type EventKind = RLMEvent['kind'];

export interface WelcomeMsg {
  type: 'welcome';
  version: number;
  active: string | null;
}

export interface RunStartedMsg {
  type: 'run_started';
  run_id: string;
  cell_id: string | null;
  mode: 'auto' | 'confirm-risky' | 'step';
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
  mode: 'auto' | 'confirm-risky' | 'step';
  reason: string;
  can_regenerate: boolean;
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
  mode: 'auto' | 'confirm-risky' | 'step';
  paused: boolean;
  waiting_for: number | null;
  can_regenerate: boolean;
}

export interface EventsMsg {
  type: 'events';
  run_id: string;
  events: RLMEvent[];
}

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
  answer_markdown: string | null;
  error: string | null;
  stop: 'answer' | 'max_iterations' | 'empty' | 'user' | 'interrupt' | 'budget' | 'error';
  after_cell_id: string | null;
  usage: string;
}

export interface HelloMsg {
  type: 'hello';
  frontend: string;
  version: number;
}

export interface CellInsertedMsg {
  type: 'cell_inserted';
  run_id: string;
  step: number;
  cell_id: string;
}

export interface CellOfRunMsg {
  type: 'cell_of_run';
  cell_id: string;
  cell_run_id: string;
}

export interface SetModeMsg {
  type: 'set_mode';
  run_id: string | null;
  mode: 'auto' | 'confirm-risky' | 'step';
}

export interface PauseMsg {
  type: 'pause';
  run_id: string;
}

export interface ResumeMsg {
  type: 'resume';
  run_id: string;
}

export interface StopMsg {
  type: 'stop';
  run_id: string;
}

export interface HintMsg {
  type: 'hint';
  run_id: string;
  text: string;
}

export interface RegenerateMsg {
  type: 'regenerate';
  run_id: string;
  step: number;
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

export type FrontendMsg =
  | CellInsertedMsg
  | CellOfRunMsg
  | SetModeMsg
  | PauseMsg
  | ResumeMsg
  | StopMsg
  | HintMsg
  | RegenerateMsg;

export const EVENT_BASE: Record<string, FieldSpec> = {
  run_id: {"types": ["string"]},
  parent_id: {"types": ["string", "null"], "default": null},
  depth: {"types": ["number"], "default": 0},
  ts: {"types": ["number"]}
};

export const EVENT_FIELDS: Record<EventKind, Record<string, FieldSpec>> = {
  run_started: {
    question: {"types": ["string", "null"]},
    context_meta: {"types": ["object"]},
    model: {"types": ["string"]},
    sub_model: {"types": ["string"]},
    parent_call_id: {"types": ["string", "null"], "default": null},
    settings: {"types": ["object"], "default": {}},
    prompt: {"types": ["array"], "default": []},
    parent_run: {"types": ["string", "null"], "default": null},
    branched_at: {"types": ["number", "null"], "default": null},
    fixed: {"types": ["number"], "default": 0},
    opening: {"types": ["string"], "default": ""},
    session: {"types": ["string", "null"], "default": null},
    follows: {"types": ["string", "null"], "default": null}
  },
  root_request: {
    turn: {"types": ["number"]},
    messages: {"types": ["number"]},
    chars: {"types": ["number"]},
    content: {"types": ["string"], "default": ""},
    final_turn: {"types": ["boolean"], "default": false}
  },
  root_reply: {
    turn: {"types": ["number"]},
    text: {"types": ["string"]},
    model: {"types": ["string"]},
    input_tokens: {"types": ["number"], "default": 0},
    output_tokens: {"types": ["number"], "default": 0},
    cached_tokens: {"types": ["number"], "default": 0},
    latency_s: {"types": ["number"], "default": 0.0},
    cost: {"types": ["number", "null"], "default": null}
  },
  proposal_rejected: {
    step: {"types": ["number"]},
    turn: {"types": ["number"]},
    reply: {"types": ["string"]},
    added: {"types": ["string"], "default": ""},
    sampling: {"types": ["object", "null"], "default": null},
    rewound: {"types": ["boolean"], "default": false}
  },
  compacted: {
    turn: {"types": ["number"]},
    first_turn: {"types": ["number"]},
    last_turn: {"types": ["number"]},
    tokens: {"types": ["number"]},
    window: {"types": ["number"]},
    summary: {"types": ["string"]},
    names: {"types": ["array"], "default": []},
    messages: {"types": ["array"], "default": []}
  },
  step_started: {
    step: {"types": ["number"]},
    code: {"types": ["string"]},
    author: {"types": ["string"], "values": ["root", "human"], "default": "root"},
    replayed: {"types": ["boolean"], "default": false}
  },
  step_finished: {
    step: {"types": ["number"]},
    output: {"types": ["string"]},
    error: {"types": ["string", "null"], "default": null},
    elapsed_s: {"types": ["number"], "default": 0.0},
    cut_chars: {"types": ["number"], "default": 0},
    restored: {"types": ["array"], "default": []}
  },
  subcall_started: {
    call_id: {"types": ["string"]},
    step: {"types": ["number", "null"]},
    model: {"types": ["string"]},
    prompt_preview: {"types": ["string"]},
    prompt_chars: {"types": ["number"]},
    batch_id: {"types": ["string", "null"], "default": null},
    batch_size: {"types": ["number"], "default": 1},
    call_kind: {"types": ["string"], "values": ["llm", "rlm"], "default": "llm"},
    prompt_key: {"types": ["string"], "default": ""},
    images: {"types": ["array"], "default": []}
  },
  subcall_finished: {
    call_id: {"types": ["string"]},
    step: {"types": ["number", "null"]},
    model: {"types": ["string"]},
    input_tokens: {"types": ["number"], "default": 0},
    output_tokens: {"types": ["number"], "default": 0},
    cached_tokens: {"types": ["number"], "default": 0},
    latency_s: {"types": ["number"], "default": 0.0},
    cost: {"types": ["number", "null"], "default": null},
    error: {"types": ["string", "null"], "default": null},
    response_preview: {"types": ["string"], "default": ""},
    batch_id: {"types": ["string", "null"], "default": null},
    call_kind: {"types": ["string"], "values": ["llm", "rlm"], "default": "llm"},
    cancelled: {"types": ["boolean"], "default": false},
    response: {"types": ["string"], "default": ""},
    replayed: {"types": ["boolean"], "default": false}
  },
  tool_call: {
    call_id: {"types": ["string", "null"]},
    step: {"types": ["number", "null"]},
    tool: {"types": ["string"]},
    arguments: {"types": ["string"]},
    result_chars: {"types": ["number"], "default": 0},
    result_preview: {"types": ["string"], "default": ""},
    latency_s: {"types": ["number"], "default": 0.0},
    error: {"types": ["string", "null"], "default": null}
  },
  answer_set: {
    content: {"types": ["string"]},
    source: {"types": ["string"], "values": ["answer", "FINAL", "FINAL_VAR", "final_turn"]}
  },
  answer_doubted: {
    content: {"types": ["string"]},
    source: {"types": ["string"], "values": ["answer", "FINAL", "FINAL_VAR"]},
    reason: {"types": ["string"]},
    by: {"types": ["string"], "values": ["check", "verify", "type"], "default": "check"}
  },
  human_edit: {
    step: {"types": ["number"]},
    proposed: {"types": ["string"]},
    executed: {"types": ["string"]}
  },
  hint: {
    text: {"types": ["string"]}
  },
  warning: {
    code: {"types": ["string"], "values": ["no_code", "unseen", "after_error", "unsupported", "repetition", "reply_cut", "replay_diverged", "hint_unused", "compaction_failed", "subcall_split", "low_confidence"]},
    text: {"types": ["string"]}
  },
  run_ended: {
    response: {"types": ["string", "null"]},
    error: {"types": ["string", "null"]},
    iterations: {"types": ["number"]},
    elapsed_s: {"types": ["number"]},
    stop: {"types": ["string"], "values": ["answer", "max_iterations", "empty", "user", "interrupt", "budget", "error"], "default": "answer"}
  },
  voted: {
    answer: {"types": ["string", "null"]},
    clear: {"types": ["boolean"]},
    runs: {"types": ["array"], "default": []},
    candidates: {"types": ["array"], "default": []},
    input_tokens: {"types": ["number"], "default": 0},
    output_tokens: {"types": ["number"], "default": 0},
    cost: {"types": ["number", "null"], "default": null}
  }
};

export const KERNEL_FIELDS: Record<KernelMsg['type'], Record<string, FieldSpec>> = {
  welcome: {
    version: {"types": ["number"]},
    active: {"types": ["string", "null"], "default": null}
  },
  run_started: {
    run_id: {"types": ["string"]},
    cell_id: {"types": ["string", "null"], "default": null},
    mode: {"types": ["string"], "values": ["auto", "confirm-risky", "step"], "default": "auto"},
    question: {"types": ["string", "null"], "default": null},
    model: {"types": ["string"], "default": ""}
  },
  propose_step: {
    run_id: {"types": ["string"]},
    step: {"types": ["number"]},
    code: {"types": ["string"]},
    reply: {"types": ["string"], "default": ""},
    after_cell_id: {"types": ["string", "null"], "default": null},
    mode: {"types": ["string"], "values": ["auto", "confirm-risky", "step"], "default": "auto"},
    reason: {"types": ["string"], "default": ""},
    can_regenerate: {"types": ["boolean"], "default": false}
  },
  step_executed: {
    run_id: {"types": ["string"]},
    step: {"types": ["number"]},
    cell_id: {"types": ["string"], "default": ""},
    edited: {"types": ["boolean"], "default": false},
    error: {"types": ["boolean"], "default": false}
  },
  run_state: {
    run_id: {"types": ["string"]},
    mode: {"types": ["string"], "values": ["auto", "confirm-risky", "step"]},
    paused: {"types": ["boolean"]},
    waiting_for: {"types": ["number", "null"], "default": null},
    can_regenerate: {"types": ["boolean"], "default": false}
  },
  events: {
    run_id: {"types": ["string"]},
    events: {"types": ["array"]}
  },
  root_progress: {
    run_id: {"types": ["string"]},
    turn: {"types": ["number"]},
    tokens: {"types": ["number"]}
  },
  run_finished: {
    run_id: {"types": ["string"]},
    answer: {"types": ["string", "null"], "default": null},
    answer_markdown: {"types": ["string", "null"], "default": null},
    error: {"types": ["string", "null"], "default": null},
    stop: {"types": ["string"], "values": ["answer", "max_iterations", "empty", "user", "interrupt", "budget", "error"], "default": "answer"},
    after_cell_id: {"types": ["string", "null"], "default": null},
    usage: {"types": ["string"], "default": ""}
  }
};
