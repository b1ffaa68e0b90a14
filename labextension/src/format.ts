/**
 * Numbers and lines as the side panel, the toolbar and the badges show them. The one-line texts
 * of a run (a tool call, a step, the totals) are those of `rlm_kernel/view.py`, held to the same
 * fixtures (`tests/fixtures/fold`).
 */

import {
  stepTally,
  stepTools,
  type RunView,
  type StepAuthor,
  type StepStatus,
  type StepView,
  type Tally,
  type ToolView
} from './runs';

export function formatTokens(n: number): string {
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n.toLocaleString('en-US');
}

export function formatCost(cost: number | null): string {
  if (cost === null) {
    return '$?';
  }
  if (cost === 0) {
    return '$0';
  }
  if (cost < 0.0001) {
    return '<$0.0001';
  }
  return cost < 0.01 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(3)}`;
}

export function formatSeconds(s: number): string {
  return s < 10 ? `${s.toFixed(2)} s` : `${s.toFixed(1)} s`;
}

export function formatTally(t: Tally): string {
  const parts = [
    `${t.calls} call${t.calls === 1 ? '' : 's'}`,
    `${formatTokens(t.inputTokens)} in / ${formatTokens(t.outputTokens)} out tokens`,
    formatCost(t.cost)
  ];
  if (t.running > 0) {
    parts.push(`${t.running} running`);
  }
  return parts.join(' · ');
}

/** Characters of a tool call's arguments in its line (all of them in its tooltip). */
export const TOOL_ARGS_SHOWN = 60;
/** Characters of a tool call's error in its line. */
export const TOOL_ERROR_SHOWN = 160;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A tool call in short, e.g. `open_file(name="a.txt", start=8)`, as the in-cell view writes it
 * (view.py's tool_call_text): arguments that are not JSON (cut by the kernel) stay as they are.
 */
export function toolCallText(tool: ToolView): string {
  let parsed: unknown = null;
  try {
    parsed = tool.arguments === '' ? {} : JSON.parse(tool.arguments);
  } catch {
    parsed = null;
  }
  let shown = tool.arguments;
  if (isRecord(parsed)) {
    let args: unknown[] = [];
    let kwargs: Record<string, unknown> = parsed;
    const keys = Object.keys(parsed);
    if (tool.byCode && keys.length === 2 && 'args' in parsed && isRecord(parsed.kwargs)) {
      args = Array.isArray(parsed.args) ? parsed.args : [parsed.args];
      kwargs = parsed.kwargs;
    }
    shown = [
      ...args.map(a => JSON.stringify(a)),
      ...Object.entries(kwargs).map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    ].join(', ');
  }
  if (shown.length > TOOL_ARGS_SHOWN) {
    shown = `${shown.slice(0, TOOL_ARGS_SHOWN - 1)}…`;
  }
  return `${tool.tool}(${shown})`;
}

/** What a tool call gave: its result's size and its time, or its error. */
export function toolOutcome(tool: ToolView): string {
  const gave =
    tool.error !== null ? `✗ ${tool.error.slice(0, TOOL_ERROR_SHOWN)}` : `${formatTokens(tool.resultChars)} chars`;
  return `${gave} · ${formatSeconds(tool.latencyS)}`;
}

/** A tool call in a line: what was called, and what it gave. */
export function toolLine(tool: ToolView): string {
  return `${toolCallText(tool)} · ${toolOutcome(tool)}`;
}

/** The tools called, in the order first called: `list_files, open_file × 2`. */
export function toolNames(tools: ToolView[]): string {
  const counts = new Map<string, number>();
  for (const t of tools) {
    counts.set(t.tool, (counts.get(t.tool) ?? 0) + 1);
  }
  return [...counts].map(([name, n]) => (n === 1 ? name : `${name} × ${n}`)).join(', ');
}

const WHO: Record<StepAuthor, string> = {
  root: 'proposed by the root LM',
  'human-edited': 'proposed by the root LM, edited by you',
  human: 'run by you'
};

/**
 * The tooltip of a step cell's badge: the tokens, latency and cost of the root LM reply that
 * proposed the step and of the step's sub-calls, and how long its cell ran.
 */
export function stepTooltip(step: StepView | null, number: number, author: StepAuthor): string {
  const head = `RLM step ${number} (${WHO[author]})`;
  if (step === null) {
    return `${head}\nTokens and sub-calls: run the notebook again, or see the %%rlm cell's trajectory.`;
  }
  const lines = [head];
  if (step.reply !== null) {
    const r = step.reply;
    lines.push(
      `root LM reply: ${formatTokens(r.inputTokens)} in / ${formatTokens(r.outputTokens)} out tokens · ` +
        `latency: ${formatSeconds(r.latencyS)} · ${formatCost(r.cost)}`
    );
  }
  const t = stepTally(step);
  if (t.calls === 0 && t.running === 0) {
    lines.push('No sub-calls.');
  } else {
    lines.push(
      `${t.calls} sub-call${t.calls === 1 ? '' : 's'}${t.running ? ` (+${t.running} running)` : ''}`,
      `tokens: ${formatTokens(t.inputTokens)} in / ${formatTokens(t.outputTokens)} out`,
      `latency: ${formatSeconds(t.latencyS)} total, ${formatSeconds(t.maxLatencyS)} max`,
      `cost: ${formatCost(t.cost)}`
    );
  }
  const tools = stepTools(step);
  if (tools.length > 0) {
    lines.push(`${tools.length} tool call${tools.length === 1 ? '' : 's'}: ${toolNames(tools)}`);
  }
  if (step.elapsedS !== null) {
    lines.push(`ran in ${formatSeconds(step.elapsedS)}`);
  }
  return lines.join('\n');
}

const STEP_STATUS: Record<string, string> = {
  error: 'error',
  done: 'done',
  stopped: 'stopped before it ran',
  waiting: 'waiting for you to run its cell',
  paused: 'paused',
  running: 'running'
};

/**
 * Where a step stands, with what the front end knows (view.py's `step_status`): one not yet run
 * waits for the human when the run asks for it, and is paused (held back) while the run is.
 */
export function stepStatus(step: StepView, run: RunView): StepStatus | 'paused' {
  if (step.status !== 'waiting') {
    return step.status; // 'running': its cell runs, or its code started sub-calls
  }
  if (run.waitingFor === step.step) {
    return 'waiting';
  }
  return run.paused ? 'paused' : 'running';
}

/** One step in a line, e.g. `step 2 · root · done · 3 sub-call(s) · root LM 1.20 s · code 0.10 s`. */
export function stepLine(step: StepView, run: RunView): string {
  const author = step.author === 'human' ? 'human' : step.author === 'human-edited' ? 'root, edited' : 'root';
  const status = STEP_STATUS[stepStatus(step, run)];
  const bits = [`step ${step.step}`, step.replayed ? `${author}, replayed` : author, status];
  if (step.calls.length > 0) {
    const running = step.calls.filter(c => c.status === 'running').length;
    bits.push(`${step.calls.length} sub-call(s)${running > 0 ? `, ${running} running` : ''}`);
  }
  const tools = stepTools(step);
  if (tools.length > 0) {
    const failed = tools.filter(t => t.error !== null).length;
    bits.push(`${tools.length} tool call(s): ${toolNames(tools)}${failed > 0 ? `, ${failed} failed` : ''}`);
  }
  if (step.lmS !== null) {
    bits.push(`root LM ${step.lmS.toFixed(2)} s`);
  }
  if (step.elapsedS !== null) {
    bits.push(`code ${step.elapsedS.toFixed(2)} s`);
  }
  return bits.join(' · ');
}

/**
 * `part` of `whole` in whole percent, never rounded to 0% or 100% when it is neither none nor all
 * of it (as the Python views write it).
 */
export function percent(part: number, whole: number): string {
  if (whole <= 0) {
    return '0%';
  }
  const value = Math.round((100 * part) / whole);
  if (part > 0 && value === 0) {
    return '<1%';
  }
  if (part < whole && value === 100) {
    return '>99%';
  }
  return `${value}%`;
}

/** The run's figures, children included: `5 LM call(s) · 25 in / 9 out tokens · $1.5000`. */
export function totalsLine(run: RunView): string {
  const t = run.totals;
  const tools = run.toolCalls > 0 ? ` · ${run.toolCalls} tool call(s)` : '';
  const cached =
    t.cachedTokens > 0
      ? ` · ${t.cachedTokens.toLocaleString('en-US')} cached (${percent(t.cachedTokens, t.inputTokens)} of input)`
      : '';
  const cost = t.cost === null ? 'cost unknown' : `$${t.cost.toFixed(4)}`;
  return (
    `${t.calls} LM call(s)${tools} · ${t.inputTokens.toLocaleString('en-US')} in / ` +
    `${t.outputTokens.toLocaleString('en-US')} out tokens${cached} · ${cost}`
  );
}

/** The notebook's kernel as the side panel sees it: its name, and whether it is RLM Python (null: none). */
export interface KernelSeen {
  name: string;
  isRlm: boolean;
}

const SWITCH = 'choose it with Kernel › Change Kernel…';

/**
 * What the side panel says of the kernel, and when it lists no run. Live runs come over the RLM
 * Python kernel's comm; another kernel runs `%%rlm` with its steps in the cell, so the panel says
 * that plainly, and still lists the runs saved in the notebook.
 */
export function kernelLines(connected: boolean, kernel: KernelSeen | null): { connection: string; empty: string } {
  if (connected) {
    return {
      connection: 'connected to the RLM Python kernel',
      empty: 'No runs yet. Run a %%rlm cell: each root step becomes a cell.'
    };
  }
  if (kernel?.isRlm) {
    return {
      connection: 'RLM Python kernel, not connected yet (starting, or another version of rlm-kernel)',
      empty: 'No runs yet. Once connected, run a %%rlm cell: each root step becomes a cell.'
    };
  }
  const which = kernel === null ? 'No kernel' : `Kernel ${kernel.name}`;
  return {
    connection: `${which}: %%rlm runs (after %load_ext rlm_kernel) are listed as they go, each in its cell; steps as cells need the RLM Python kernel (${SWITCH})`,
    empty: `No runs yet. Run %load_ext rlm_kernel, then a %%rlm cell; for each step as a cell, ${SWITCH.replace('choose it', 'choose the RLM Python kernel')}.`
  };
}
