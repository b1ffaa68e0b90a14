/** Numbers as the side panel, the toolbar and the badges show them. */

import { stepTally, type StepAuthor, type StepView, type Tally } from './runs';

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

/** The tooltip of a step cell's badge: its sub-calls' tokens, latency and cost. */
export function stepTooltip(step: StepView | null, number: number, author: StepAuthor): string {
  const who = author === 'human-edited' ? 'proposed by the root LM, edited by you' : 'proposed by the root LM';
  const head = `RLM step ${number} (${who})`;
  if (step === null) {
    return `${head}\nSub-call details: run the notebook again, or see the %%rlm cell's trajectory.`;
  }
  const t = stepTally(step);
  if (t.calls === 0 && t.running === 0) {
    return `${head}\nNo sub-calls.`;
  }
  const lines = [
    head,
    `${t.calls} sub-call${t.calls === 1 ? '' : 's'}${t.running ? ` (+${t.running} running)` : ''}`,
    `tokens: ${formatTokens(t.inputTokens)} in / ${formatTokens(t.outputTokens)} out`,
    `latency: ${formatSeconds(t.latencyS)} total, ${formatSeconds(t.maxLatencyS)} max`,
    `cost: ${formatCost(t.cost)}`
  ];
  return lines.join('\n');
}
