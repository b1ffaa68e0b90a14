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
  if (step.elapsedS !== null) {
    lines.push(`ran in ${formatSeconds(step.elapsedS)}`);
  }
  return lines.join('\n');
}
