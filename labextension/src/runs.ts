/**
 * The runs of one notebook, folded from the kernel's messages and events: each run's steps, each
 * step's sub-calls with their status, tokens, latency and cost, and running totals.
 *
 * Theory of operation. A `RunLog` only receives data (`applyMessage`, `applyEvent`, and a few
 * facts the front end observes itself: which cell holds a step, which cell a human ran); it
 * never touches a comm or a widget. Views read it after `onChange` fires. What counts as an LM
 * call is `isLmCall`, usage.py's `is_lm_call`: the root replies at any depth plus the `llm`
 * sub-calls that asked an LM; an `rlm` sub-call is shown but counted through its child run's own
 * calls, never twice, and a branch's replayed sub-call was answered from its recording.
 * Events of a child run (`rlm_query`, depth > 0) roll up into the top-level run, under the
 * parent step that spawned them. A tool call goes under the sub-call whose model asked for it,
 * or under its step when the root's code called it.
 *
 * The same fold in Python is `rlm_kernel/view.py`; the fixtures in `tests/fixtures/fold` hold both
 * to one result (`__tests__/fold.spec.ts`, `tests/unit/test_fold_fixtures.py`).
 */

import { imageRecords, type ImageRecord } from './images';
import type {
  KernelMsg,
  RunEndedEvent,
  Mode,
  ProposeStepMsg,
  RLMEvent,
  RunFinishedMsg,
  RunStartedMsg,
  StepExecutedMsg,
  SubcallFinishedEvent,
  SubcallStartedEvent,
  ToolCalledEvent
} from './protocol';

type StopReason = RunEndedEvent['stop'];

export type CallStatus = 'running' | 'done' | 'error' | 'cancelled';
/** `waiting`: proposed, its cell not run yet; `stopped`: the run ended before the step ran. */
export type StepStatus = 'waiting' | 'running' | 'done' | 'error' | 'stopped';
export type RunStatus = 'running' | 'done' | 'error' | 'stopped';
export type StepAuthor = 'root' | 'human' | 'human-edited';

export interface Tally {
  calls: number;
  running: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** null when some call's cost is unknown (a model without a price). */
  cost: number | null;
  latencyS: number;
  maxLatencyS: number;
}

/** One tool call (events.py's ToolCalled): it has ended when its event comes. */
export interface ToolView {
  tool: string;
  /** As JSON (cut at 1,000 characters by the kernel). */
  arguments: string;
  resultChars: number;
  resultPreview: string;
  latencyS: number;
  error: string | null;
  depth: number;
  /** Called by the root's code, whose arguments read `{"args": [...], "kwargs": {...}}`. */
  byCode: boolean;
}

export interface CallView {
  callId: string;
  /** `llm` and `rlm` are sub-calls; `root` is the root LM of a child run. */
  kind: 'llm' | 'rlm' | 'root';
  runId: string;
  depth: number;
  step: number | null;
  model: string;
  status: CallStatus;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  latencyS: number;
  cost: number | null;
  error: string | null;
  prompt: string;
  response: string;
  batchId: string | null;
  /** A branch's replayed step's sub-call, answered from the recording: no LM was called. */
  replayed: boolean;
  /** Counted in the run's LM calls (`isLmCall` of the event that ended it). */
  lmCall: boolean;
  /** The tools its model asked for, in order. */
  tools: ToolView[];
  /** The images it sent (`llm_query(images=)`). */
  images: ImageRecord[];
}

export interface StepView {
  step: number;
  author: StepAuthor;
  status: StepStatus;
  code: string;
  /** The notebook cell holding the step, once known. */
  cellId: string | null;
  calls: CallView[];
  /** The root LM's reply that proposed the step (a root step), with its tokens, latency, cost. */
  reply: CallView | null;
  /** That reply's latency, on the first step it proposed only (so a reply's time is counted once). */
  lmS: number | null;
  elapsedS: number | null;
  /** What the step printed, once it finished. */
  output: string | null;
  error: string | null;
  /** A branch running again a step of the run it continues (its cell is that run's). */
  replayed: boolean;
  /** The tools the step's code called (a child run's code's too, under the step that started it). */
  tools: ToolView[];
}

export interface RunView {
  runId: string;
  /** The `%%rlm` cell. */
  cellId: string | null;
  question: string | null;
  model: string;
  subModel: string;
  mode: Mode;
  paused: boolean;
  waitingFor: number | null;
  /** Whether the waiting step may be proposed again (Regenerate): none of its reply has run. */
  canRegenerate: boolean;
  status: RunStatus;
  answer: string | null;
  error: string | null;
  usage: string;
  steps: StepView[];
  /** Calls outside any step of this run (none expected, kept so totals add up). */
  looseCalls: CallView[];
  /** The top-level root LM's turns. */
  root: Tally;
  /** Everything: root replies at any depth and `llm` sub-calls. */
  totals: Tally;
  /** What a reader of the result should know (an answer given without code, a looping reply). */
  warnings: string[];
  /** Answers the root committed that were sent back to it, each with why (the grounding check). */
  sentBack: string[];
  /** Tool calls at any depth, whoever asked for them. */
  toolCalls: number;
  /** Pieces (about tokens) of the root reply being written, while one is; else 0. */
  writing: number;
  /** From a saved notebook's trajectory rather than a live kernel. */
  saved: boolean;
  startedTs: number | null;
  elapsedS: number | null;
  /** A branch (rewind): the run it continues, and the root step it proposed again. */
  parentRun: string | null;
  branchedAt: number | null;
}

export function emptyTally(): Tally {
  return {
    calls: 0,
    running: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    cost: 0,
    latencyS: 0,
    maxLatencyS: 0
  };
}

function addCall(tally: Tally, call: CallView): void {
  tally.calls += 1;
  tally.inputTokens += call.inputTokens;
  tally.outputTokens += call.outputTokens;
  tally.cachedTokens += call.cachedTokens;
  tally.cost = call.cost === null || tally.cost === null ? null : tally.cost + call.cost;
  tally.latencyS += call.latencyS;
  tally.maxLatencyS = Math.max(tally.maxLatencyS, call.latencyS);
}

/** Whether an event ends one LM call (usage.py's `is_lm_call`): `rlm` sub-calls count through
 * their child run's own calls; a branch's replayed sub-call called no LM. */
export function isLmCall(event: RLMEvent): boolean {
  return (
    event.kind === 'root_reply' ||
    (event.kind === 'subcall_finished' && event.call_kind === 'llm' && !(event.replayed ?? false))
  );
}

/** The tally of a step's calls: tokens, latency and cost of its sub-calls (children included). */
export function stepTally(step: StepView): Tally {
  const tally = emptyTally();
  for (const call of step.calls) {
    if (call.status === 'running') {
      tally.running += 1;
    } else if (call.lmCall) {
      addCall(tally, call);
    }
  }
  return tally;
}

/** A step's tool calls: its code's and its sub-calls'. */
export function stepTools(step: StepView): ToolView[] {
  return [...step.tools, ...step.calls.flatMap(call => call.tools)];
}

/**
 * A cell that steers a run (`%rlm hint`, `%rlm stop`, `%%rlm`, `x = %rlm ...`) rather than joining
 * it: the forms the kernel's input transformer rewrites, plus `%rlm?` (help). `%rlmx` is another
 * magic, so its cell is the human's code like any other.
 */
const COMMAND = /^(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*)?(%%?)rlm(?=\s|\?|$)/;

/** Which of the kernel's magics a cell's source starts with, if any (view.py's `rlm_command`). */
export function rlmCommand(source: string): '%rlm' | '%%rlm' | null {
  const m = COMMAND.exec(source.trimStart());
  return m === null ? null : m[1] === '%%' ? '%%rlm' : '%rlm';
}

export class RunLog {
  /** Runs in the order they started. */
  readonly runs: RunView[] = [];
  /** The run in progress, as the kernel told us (`welcome`, `run_started`, `run_finished`). */
  activeRunId: string | null = null;

  private byId = new Map<string, RunView>();
  /** Child run id → [top-level run id, the parent step it belongs to]. */
  private children = new Map<string, [string, number | null]>();
  private calls = new Map<string, CallView>();
  /** Each top-level run's latest root reply: the one that proposes the steps that follow it. */
  private replies = new Map<string, CallView>();
  /** Its latency, until the first step it proposed takes it. */
  private replyLatency = new Map<string, number>();
  /** Cells a human ran during the active run, waiting for their `step_started` (author human). */
  private humanCells: string[] = [];
  /**
   * By run: the waiting proposal whose number a human's cell took (it ran first), until the
   * proposal's `step_started` under its next number takes its cell back.
   */
  private renumbered = new Map<string, Pick<StepView, 'cellId' | 'author' | 'reply' | 'lmS'>>();
  private answered = new Set<string>();
  private listeners = new Set<() => void>();

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }

  get(runId: string): RunView | undefined {
    return this.byId.get(runId);
  }

  get active(): RunView | null {
    return this.activeRunId === null ? null : (this.byId.get(this.activeRunId) ?? null);
  }

  /** The step held by a cell, if any. */
  stepOfCell(cellId: string): [RunView, StepView] | null {
    for (const run of this.runs) {
      for (const step of run.steps) {
        if (step.cellId === cellId) {
          return [run, step];
        }
      }
    }
    return null;
  }

  /** Totals over every run of the notebook. */
  totals(): Tally {
    const all = emptyTally();
    for (const run of this.runs) {
      all.calls += run.totals.calls;
      all.running += run.totals.running;
      all.inputTokens += run.totals.inputTokens;
      all.outputTokens += run.totals.outputTokens;
      all.cachedTokens += run.totals.cachedTokens;
      all.cost = all.cost === null || run.totals.cost === null ? null : all.cost + run.totals.cost;
      all.latencyS += run.totals.latencyS;
      all.maxLatencyS = Math.max(all.maxLatencyS, run.totals.maxLatencyS);
    }
    return all;
  }

  /** The cell already holding a proposed step, if the front end inserted one (a repeated proposal). */
  proposalCell(runId: string, step: number): string | null {
    const found = this.byId.get(runId)?.steps.find(s => s.step === step);
    return found !== undefined && found.author !== 'human' ? found.cellId : null;
  }

  /** Forget a run (Undo removed its cells): the runs panel no longer lists it. */
  forget(runId: string): void {
    const run = this.byId.get(runId);
    if (run === undefined || this.activeRunId === runId) {
      return;
    }
    this.byId.delete(runId);
    this.runs.splice(this.runs.indexOf(run), 1);
    this.changed();
  }

  /** Claim the answer cell of a run: true the first time only, so a repeated run_finished adds none. */
  claimAnswer(runId: string): boolean {
    if (this.answered.has(runId)) {
      return false;
    }
    this.answered.add(runId);
    return true;
  }

  // -- what the front end observes itself ---------------------------------------------------

  /** The extension inserted the cell for a proposed step. */
  bindCell(runId: string, step: number, cellId: string): void {
    const run = this.byId.get(runId);
    if (run === undefined) {
      return;
    }
    this.step(run, step).cellId = cellId;
    this.changed();
  }

  /**
   * A code cell started to run. Returns what it is to the active run: its step (a proposed
   * step's cell), `human` (it will become a human step), or null (no run, or a `%rlm` command).
   */
  cellRun(cellId: string, source: string): StepView | 'human' | null {
    const run = this.active;
    if (run === null || run.status !== 'running' || source.trim() === '' || rlmCommand(source) !== null) {
      return null;
    }
    // A proposed step's cell runs as that step once; run again, it is a human step.
    const step = run.steps.find(s => s.cellId === cellId && s.author !== 'human' && s.status === 'waiting');
    if (step !== undefined) {
      step.status = 'running';
      this.changed();
      return step;
    }
    this.humanCells.push(cellId);
    return 'human';
  }

  /** The comm went away (kernel restarted, or the notebook moved to another kernel). */
  kernelLost(reason: string): void {
    const run = this.active;
    this.activeRunId = null;
    this.humanCells = [];
    if (run !== null && run.status === 'running') {
      run.error = `Lost the kernel's connection: ${reason}.`;
      this.end(run, null, 'error');
    }
    this.changed();
  }

  // -- the kernel's messages ----------------------------------------------------------------

  applyMessage(msg: KernelMsg): void {
    switch (msg.type) {
      case 'welcome':
        // A (re)connection: the kernel says which run, if any, is still going.
        this.activeRunId = msg.active;
        if (msg.active !== null) {
          const run = this.run(msg.active);
          run.status = 'running';
          run.error = null;
          run.saved = false;
        }
        break;
      case 'run_started':
        this.runStarted(msg);
        break;
      case 'propose_step':
        this.proposed(msg);
        break;
      case 'step_executed':
        this.executed(msg);
        break;
      case 'run_state': {
        const run = this.run(msg.run_id);
        run.mode = msg.mode;
        run.paused = msg.paused;
        run.waitingFor = msg.waiting_for;
        run.canRegenerate = msg.can_regenerate;
        break;
      }
      case 'events':
        for (const event of msg.events) {
          this.fold(event);
        }
        break;
      case 'root_progress':
        this.run(msg.run_id).writing = msg.tokens;
        break;
      case 'run_finished':
        this.finished(msg);
        break;
    }
    this.changed();
  }

  /** Fold one event (live, or from a saved trajectory). */
  applyEvent(event: RLMEvent): void {
    this.fold(event);
    this.changed();
  }

  /**
   * Fold the events a finished run kept in the notebook (its `%%rlm` cell's output metadata), and
   * the mode it ended in when that was kept too. Runs this log already knows from the kernel are
   * skipped: their events came live.
   */
  applySaved(events: RLMEvent[], mode: Mode | null = null): void {
    const live = new Set(this.byId.keys());
    const isLive = (e: RLMEvent): boolean =>
      live.has(e.run_id) ||
      (e.parent_id !== null && (live.has(e.parent_id) || live.has(this.children.get(e.parent_id)?.[0] ?? '')));
    for (const event of events) {
      if (isLive(event)) {
        continue;
      }
      this.fold(event);
      if (event.depth === 0) {
        const run = this.run(event.run_id);
        run.saved = true;
        run.mode = mode ?? run.mode;
      }
    }
    this.changed();
  }

  private runStarted(msg: RunStartedMsg): void {
    const run = this.run(msg.run_id);
    run.cellId = msg.cell_id;
    run.mode = msg.mode;
    run.question = msg.question;
    run.model = msg.model || run.model;
    run.status = 'running';
    run.saved = false;
    this.activeRunId = msg.run_id;
    this.humanCells = [];
  }

  private proposed(msg: ProposeStepMsg): void {
    const run = this.run(msg.run_id);
    const step = this.step(run, msg.step);
    step.author = step.author === 'human-edited' ? step.author : 'root';
    step.code = msg.code;
    // msg.mode is this step's (auto runs it, step waits): the run's own mode comes in run_state.
    run.waitingFor = msg.mode === 'step' ? msg.step : null;
    run.canRegenerate = msg.mode === 'step' && msg.can_regenerate;
  }

  private executed(msg: StepExecutedMsg): void {
    const run = this.run(msg.run_id);
    const step = this.step(run, msg.step);
    if (msg.cell_id) {
      step.cellId = msg.cell_id;
    }
    if (msg.edited) {
      step.author = 'human-edited';
    }
    if (step.status === 'waiting' || step.status === 'running') {
      step.status = msg.error ? 'error' : 'done';
    }
    if (run.waitingFor === msg.step) {
      run.waitingFor = null;
    }
  }

  private finished(msg: RunFinishedMsg): void {
    const run = this.run(msg.run_id);
    run.answer = msg.answer;
    run.error = msg.error;
    run.usage = msg.usage;
    this.end(run, msg.answer, msg.stop);
    if (this.activeRunId === msg.run_id) {
      this.activeRunId = null;
    }
    this.humanCells = [];
  }

  private end(run: RunView, answer: string | null, stop: StopReason): void {
    const answered = answer !== null && answer.trim() !== ''; // an empty answer is no answer (the kernel says why)
    run.status = answered ? 'done' : stop === 'user' || stop === 'interrupt' ? 'stopped' : 'error';
    run.writing = 0;
    run.paused = false;
    run.waitingFor = null;
    for (const step of run.steps) {
      if (step.status === 'waiting' || step.status === 'running') {
        step.status = 'stopped'; // never ran, or was interrupted
      }
    }
    for (const call of this.callsOf(run)) {
      if (call.status === 'running') {
        call.status = 'cancelled';
        call.cost = 0; // as the kernel's pool reports a cancelled call
        run.totals.running -= 1;
      }
    }
  }

  // -- events -------------------------------------------------------------------------------

  private fold(event: RLMEvent): void {
    const top = this.topOf(event);
    if (top === null) {
      return;
    }
    const [run, parentStep] = top;
    const child = event.depth > 0;
    switch (event.kind) {
      case 'run_started':
        if (!child) {
          run.question = event.question;
          run.model = event.model;
          run.subModel = event.sub_model;
          run.startedTs = event.ts;
          run.parentRun = event.parent_run ?? null;
          run.branchedAt = event.branched_at ?? null;
        }
        break;
      case 'root_reply': {
        if (!child) {
          run.writing = 0;
        }
        const call = this.newCall({
          callId: `${event.run_id}:turn${event.turn}`,
          kind: 'root',
          runId: event.run_id,
          depth: event.depth,
          step: parentStep,
          model: event.model,
          status: 'done',
          inputTokens: event.input_tokens,
          outputTokens: event.output_tokens,
          cachedTokens: event.cached_tokens,
          latencyS: event.latency_s,
          cost: event.cost,
          // A step keeps its root reply whole; a child run's turn is a row, cut as a sub-call's is.
          response: child ? event.text.slice(0, 200) : event.text,
          lmCall: isLmCall(event)
        });
        addCall(run.totals, call);
        if (!child) {
          addCall(run.root, call);
          this.replies.set(run.runId, call);
          this.replyLatency.set(run.runId, event.latency_s);
        } else {
          this.attach(run, call);
        }
        break;
      }
      case 'step_started':
        if (!child) {
          const step = this.step(run, event.step);
          step.code = event.code;
          if (event.replayed) {
            // Its cell is the continued run's: no new cell, no human cell of this run.
            step.replayed = true;
            step.author = event.author === 'human' ? 'human' : 'root';
            step.status = 'running';
            const original = this.byId.get(run.parentRun ?? '')?.steps.find(s => s.step === event.step);
            step.cellId = original?.cellId ?? null;
          } else if (event.author === 'human') {
            if (step.author !== 'human' && step.status === 'waiting') {
              // A proposal that had not run: the human's cell ran first and took its number; the
              // proposal comes again under the next one.
              this.renumbered.set(run.runId, { cellId: step.cellId, author: step.author, reply: step.reply, lmS: step.lmS });
              step.cellId = null;
              step.reply = null;
              step.lmS = null;
            }
            step.author = 'human';
            step.status = 'running';
            step.cellId = step.cellId ?? this.humanCells.shift() ?? null;
          } else {
            const moved = this.renumbered.get(run.runId);
            this.renumbered.delete(run.runId);
            step.cellId = step.cellId ?? moved?.cellId ?? null;
            step.author = (moved?.author ?? step.author) === 'human-edited' ? 'human-edited' : 'root';
            step.reply = this.replies.get(run.runId) ?? moved?.reply ?? null;
            step.lmS = this.replyLatency.get(run.runId) ?? moved?.lmS ?? null;
            this.replyLatency.delete(run.runId);
          }
        }
        break;
      case 'step_finished':
        if (!child) {
          const step = this.step(run, event.step);
          step.status = event.error !== null ? 'error' : 'done';
          step.elapsedS = event.elapsed_s;
          step.output = event.output;
          step.error = event.error;
        }
        break;
      case 'subcall_started':
        this.callStarted(run, event, child ? parentStep : event.step);
        break;
      case 'subcall_finished':
        this.callFinished(run, event, child ? parentStep : event.step);
        break;
      case 'tool_call':
        this.toolCalled(run, event, child ? parentStep : event.step);
        break;
      case 'answer_set':
        if (!child) {
          run.answer = event.content;
        }
        break;
      case 'human_edit':
        if (!child) {
          // A view shows what ran: the executed code, not the proposal.
          const step = this.step(run, event.step);
          step.author = 'human-edited';
          step.code = event.executed;
        }
        break;
      case 'warning':
        if (!child) {
          run.warnings.push(event.text);
        }
        break;
      case 'answer_doubted':
        if (!child) {
          run.sentBack.push(`"${event.content.slice(0, 200)}": ${event.reason}`);
        }
        break;
      case 'run_ended':
        if (!child) {
          run.answer = event.response;
          run.error = event.error;
          run.elapsedS = event.elapsed_s;
          this.end(run, event.response, event.stop);
        }
        break;
    }
  }

  private callStarted(run: RunView, event: SubcallStartedEvent, step: number | null): void {
    const existing = this.calls.get(event.call_id);
    if (existing !== undefined) {
      return;
    }
    const call = this.newCall({
      callId: event.call_id,
      kind: event.call_kind,
      runId: event.run_id,
      depth: event.depth,
      step,
      model: event.model,
      status: 'running',
      prompt: event.prompt_preview,
      batchId: event.batch_id,
      images: imageRecords(event.images)
    });
    run.totals.running += 1;
    this.attach(run, call);
    if (call.step !== null && call.depth === 0) {
      const owner = this.step(run, call.step);
      owner.status = owner.status === 'waiting' ? 'running' : owner.status;
    }
  }

  private callFinished(run: RunView, event: SubcallFinishedEvent, step: number | null): void {
    let call = this.calls.get(event.call_id);
    if (call === undefined) {
      call = this.newCall({
        callId: event.call_id,
        kind: event.call_kind,
        runId: event.run_id,
        depth: event.depth,
        step,
        model: event.model,
        status: 'running',
        batchId: event.batch_id
      });
      run.totals.running += 1;
      this.attach(run, call);
    }
    if (call.status !== 'running') {
      return; // already ended (say, cancelled when the run ended)
    }
    run.totals.running -= 1;
    call.status = event.cancelled ? 'cancelled' : event.error === null ? 'done' : 'error';
    call.model = event.model || call.model;
    call.inputTokens = event.input_tokens;
    call.outputTokens = event.output_tokens;
    call.cachedTokens = event.cached_tokens;
    call.latencyS = event.latency_s;
    call.cost = event.cost;
    call.error = event.error;
    call.response = event.response_preview;
    call.replayed = event.replayed ?? false;
    call.lmCall = isLmCall(event);
    if (call.lmCall) {
      addCall(run.totals, call);
    }
  }

  private toolCalled(run: RunView, event: ToolCalledEvent, step: number | null): void {
    run.toolCalls += 1;
    const tool: ToolView = {
      tool: event.tool,
      arguments: event.arguments,
      resultChars: event.result_chars,
      resultPreview: event.result_preview,
      latencyS: event.latency_s,
      error: event.error,
      depth: event.depth,
      byCode: event.call_id === null
    };
    const call = event.call_id === null ? undefined : this.calls.get(event.call_id);
    if (call !== undefined) {
      call.tools.push(tool);
    } else if (step !== null) {
      this.step(run, step).tools.push(tool); // the code's, or a call this log never saw start
    }
  }

  // -- helpers ------------------------------------------------------------------------------

  /** The top-level run an event belongs to, and (for a child's event) its parent step. */
  private topOf(event: RLMEvent): [RunView, number | null] | null {
    if (event.depth === 0 || event.parent_id === null) {
      return [this.run(event.run_id), null];
    }
    const known = this.children.get(event.run_id);
    if (known !== undefined) {
      const run = this.byId.get(known[0]);
      return run === undefined ? null : [run, known[1]];
    }
    const parent = this.byId.get(event.parent_id);
    let top: [string, number | null] | undefined;
    if (parent !== undefined) {
      // The rlm_query call that started the child names its step; trajectories saved before the
      // call id was sent fall back to the latest step with a child call running.
      const call =
        event.kind === 'run_started' && event.parent_call_id !== null
          ? this.calls.get(event.parent_call_id)
          : undefined;
      top = [parent.runId, call !== undefined ? call.step : this.spawningStep(parent)];
    } else {
      top = this.children.get(event.parent_id); // a grandchild: same top run and step
    }
    if (top === undefined) {
      return null;
    }
    this.children.set(event.run_id, top);
    const run = this.byId.get(top[0]);
    return run === undefined ? null : [run, top[1]];
  }

  /** The step whose `rlm_query` most likely started a new child: the latest with one running. */
  private spawningStep(run: RunView): number | null {
    for (let i = run.steps.length - 1; i >= 0; i--) {
      const step = run.steps[i];
      if (step.calls.some(c => c.kind === 'rlm' && c.status === 'running' && c.depth === 0)) {
        return step.step;
      }
    }
    return run.steps.length > 0 ? run.steps[run.steps.length - 1].step : null;
  }

  private run(runId: string): RunView {
    let run = this.byId.get(runId);
    if (run === undefined) {
      run = {
        runId,
        cellId: null,
        question: null,
        model: '',
        subModel: '',
        mode: 'auto',
        paused: false,
        waitingFor: null,
        canRegenerate: false,
        status: 'running',
        answer: null,
        error: null,
        usage: '',
        steps: [],
        looseCalls: [],
        root: emptyTally(),
        totals: emptyTally(),
        warnings: [],
        sentBack: [],
        toolCalls: 0,
        writing: 0,
        saved: false,
        startedTs: null,
        elapsedS: null,
        parentRun: null,
        branchedAt: null
      };
      this.byId.set(runId, run);
      this.runs.push(run);
    }
    return run;
  }

  private step(run: RunView, number: number): StepView {
    let step = run.steps.find(s => s.step === number);
    if (step === undefined) {
      // Sub-calls of a human cell arrive before its step_started: `human` until told otherwise.
      step = {
        step: number,
        author: 'human',
        status: 'waiting',
        code: '',
        cellId: null,
        calls: [],
        reply: null,
        lmS: null,
        elapsedS: null,
        output: null,
        error: null,
        replayed: false,
        tools: []
      };
      run.steps.push(step);
      run.steps.sort((a, b) => a.step - b.step);
    }
    return step;
  }

  private newCall(fields: Partial<CallView> & Pick<CallView, 'callId' | 'kind' | 'runId'>): CallView {
    const call: CallView = {
      depth: 0,
      step: null,
      model: '',
      status: 'running',
      inputTokens: 0,
      outputTokens: 0,
      cachedTokens: 0,
      latencyS: 0,
      cost: null,
      error: null,
      prompt: '',
      response: '',
      batchId: null,
      replayed: false,
      lmCall: false,
      tools: [],
      images: [],
      ...fields
    };
    this.calls.set(call.callId, call);
    return call;
  }

  private attach(run: RunView, call: CallView): void {
    if (call.step === null) {
      run.looseCalls.push(call);
    } else {
      this.step(run, call.step).calls.push(call);
    }
  }

  private *callsOf(run: RunView): Iterable<CallView> {
    for (const step of run.steps) {
      yield* step.calls;
    }
    yield* run.looseCalls;
  }
}
