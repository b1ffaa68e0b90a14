/** Numbers as the side panel, the toolbar and the badges show them. */

import { stepTally, stepTools, type StepAuthor, type StepView, type Tally, type ToolView } from './runs';

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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A tool call in short, e.g. `open_file(name="a.txt", start=8)`, as the in-cell view writes it
 * (render.py's tool_call_text): arguments that are not JSON (cut by the kernel) stay as they are.
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
  const gave = tool.error !== null ? `✗ ${tool.error}` : `${formatTokens(tool.resultChars)} chars`;
  return `${gave} · ${formatSeconds(tool.latencyS)}`;
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
