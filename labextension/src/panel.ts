/**
 * The "RLM runs" side panel: the current notebook's runs, each step with its sub-calls (live
 * status, model, tokens, latency, cost), their tool calls, and running totals. Clicking a step
 * selects its cell.
 */

import { Widget } from '@lumino/widgets';

import { rlmIcon } from './icons';
import { IMAGES_SHOWN, type ImageRecord } from './images';
import type { RlmNotebook } from './notebook';
import { formatCost, formatSeconds, formatTally, formatTokens, kernelLines, stepStatus, toolCallText, toolOutcome } from './format';
import { canContinueFrom } from './rewind';
import { stepTally, stepTools, type CallView, type RunView, type StepView, type ToolView } from './runs';
import { markdownNodes, type MarkdownNode } from './safe';

const STATUS_MARK: Record<string, string> = {
  running: '⟳',
  waiting: '…',
  paused: '⏸',
  done: '✓',
  error: '✗',
  cancelled: '⊘',
  stopped: '■'
};

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export class RunsPanel extends Widget {
  private controller: RlmNotebook | null = null;
  /** Steps the user folded or unfolded, by `runId:step`; others follow the default. */
  private folded = new Map<string, boolean>();
  private content: HTMLDivElement;

  constructor() {
    super();
    this.id = 'rlm-runs-panel';
    this.addClass('rlm-runs-panel');
    this.title.icon = rlmIcon;
    this.title.caption = 'RLM runs';
    this.content = el('div', 'rlm-runs-content');
    this.node.appendChild(this.content);
    this.render();
  }

  /** Show another notebook's runs (null: no notebook). */
  setController(controller: RlmNotebook | null): void {
    if (controller === this.controller) {
      return;
    }
    this.controller?.changed.disconnect(this.onChanged, this);
    this.controller = controller;
    controller?.changed.connect(this.onChanged, this);
    this.render();
  }

  private onChanged(): void {
    if (this.isVisible) {
      this.render();
    }
  }

  protected onAfterShow(): void {
    this.render();
  }

  private render(): void {
    const root = this.content;
    root.replaceChildren();
    const header = el('div', 'rlm-runs-header');
    header.appendChild(el('h2', 'rlm-runs-title', 'RLM runs'));
    root.appendChild(header);
    const controller = this.controller;
    if (controller === null) {
      root.appendChild(el('p', 'rlm-runs-empty', 'Open a notebook on the RLM Python kernel.'));
      return;
    }
    header.appendChild(el('div', 'rlm-runs-notebook', controller.panel.context.localPath));
    const log = controller.log;
    const lines = kernelLines(controller.connected, controller.kernelSeen);
    header.appendChild(el('div', `rlm-runs-connection ${controller.connected ? 'rlm-mod-connected' : ''}`, lines.connection));
    const totals = el('div', 'rlm-runs-totals', `Total: ${formatTally(log.totals())}`);
    totals.dataset.rlmTotals = '';
    header.appendChild(totals);
    if (log.runs.length === 0) {
      root.appendChild(el('p', 'rlm-runs-empty', lines.empty));
      return;
    }
    const list = el('div', 'rlm-runs-list');
    const newest = log.runs[log.runs.length - 1];
    for (const run of [...log.runs].reverse()) {
      list.appendChild(this.renderRun(run, run.runId === log.activeRunId, run === newest));
    }
    root.appendChild(list);
  }

  private renderRun(run: RunView, active: boolean, newest: boolean): HTMLElement {
    const section = el('section', `rlm-run rlm-status-${run.status}${active ? ' rlm-mod-active' : ''}`);
    section.dataset.runId = run.runId;
    section.dataset.status = run.status;
    const head = el('div', 'rlm-run-head');
    const state = run.status === 'running' && run.paused ? 'paused' : run.status;
    head.appendChild(el('span', `rlm-pill rlm-status-${run.status}`, run.saved ? `${state} (saved)` : state));
    const question = el('span', 'rlm-run-question', run.question ?? '(no question)');
    question.title = run.question ?? '';
    head.appendChild(question);
    section.appendChild(head);

    const meta = [run.model, run.subModel && run.subModel !== run.model ? `sub: ${run.subModel}` : '', `mode: ${run.mode}`]
      .filter(Boolean)
      .join(' · ');
    section.appendChild(el('div', 'rlm-run-meta', meta));
    if (run.parentRun !== null) {
      const parent = this.controller?.log.get(run.parentRun);
      const branch = el(
        'div',
        'rlm-run-branch',
        `↳ continues ${parent?.question ? `“${parent.question}”` : `run ${run.parentRun}`} from step ${run.branchedAt ?? '?'}`
      );
      branch.dataset.parentRun = run.parentRun;
      branch.title = `A branch of run ${run.parentRun}: its steps before step ${run.branchedAt ?? '?'} were replayed, and the root proposed that step again`;
      section.appendChild(branch);
    }
    const writing = run.writing > 0 ? ` · root LM writing: ${formatTokens(run.writing)} tokens` : '';
    const tools = run.toolCalls > 0 ? ` · ${plural(run.toolCalls, 'tool call')}` : '';
    const totals = el('div', 'rlm-run-totals', formatTally(run.totals) + tools + writing);
    totals.title = `root LM: ${formatTally(run.root)}${run.usage ? `\nkernel: ${run.usage}` : ''}`;
    section.appendChild(totals);
    for (const answer of run.sentBack) {
      section.appendChild(el('div', 'rlm-run-sent-back', `↩ answer sent back to the root: ${answer}`));
    }
    for (const warning of run.warnings) {
      section.appendChild(el('div', 'rlm-run-warning', `⚠ ${warning}`));
    }

    const steps = el('ol', 'rlm-steps');
    for (const step of run.steps) {
      steps.appendChild(this.renderStep(run, step, newest));
    }
    section.appendChild(steps);
    if (run.looseCalls.length > 0) {
      const loose = el('ul', 'rlm-calls');
      run.looseCalls.forEach(call => loose.appendChild(this.renderCall(call)));
      section.appendChild(loose);
    }
    if (run.status !== 'running') {
      section.appendChild(run.answer !== null ? renderAnswer(run.answer) : errorLine(run.error));
    }
    return section;
  }

  /** Sub-calls show for the newest run's steps unless folded, and for any step still running. */
  private renderStep(run: RunView, step: StepView, newest: boolean): HTMLElement {
    const key = `${run.runId}:${step.step}`;
    const status = stepStatus(step, run);
    const item = el('li', `rlm-step rlm-status-${status} rlm-author-${step.author}`);
    item.dataset.step = String(step.step);
    item.dataset.status = status;
    const head = el('div', 'rlm-step-head');
    const open = this.folded.get(key) ?? (newest || step.status === 'running');
    const inside = step.calls.length + step.tools.length > 0;
    const toggle = el('button', 'rlm-step-toggle', inside ? (open ? '▾' : '▸') : ' ');
    toggle.disabled = !inside;
    toggle.title = open ? 'Hide sub-calls and tool calls' : 'Show sub-calls and tool calls';
    toggle.addEventListener('click', () => {
      this.folded.set(key, !open);
      this.render();
    });
    head.appendChild(toggle);
    const link = el('button', 'rlm-step-link', `${STATUS_MARK[status] ?? ''} Step ${step.step}`);
    // A step with no cell (a run of the %%rlm magic): its code and what it printed, in the tip.
    link.title =
      step.cellId !== null || run.saved
        ? 'Go to this step’s cell'
        : [step.code, step.output && `output:\n${step.output.slice(0, 500)}`].filter(Boolean).join('\n\n');
    link.addEventListener('click', () => {
      void this.controller?.revealStep(run.runId, step.step);
    });
    head.appendChild(link);
    const author = step.author === 'root' ? 'root' : step.author === 'human' ? 'human' : 'root, edited';
    head.appendChild(el('span', 'rlm-step-author', step.replayed ? `${author}, replayed` : author));
    const t = stepTally(step);
    const used = stepTools(step).length;
    const summary = [
      t.calls + t.running === 0
        ? ''
        : `${plural(t.calls + t.running, 'call')} · ${formatTokens(t.inputTokens)}/${formatTokens(t.outputTokens)} · ${formatCost(t.cost)}`,
      used === 0 ? '' : plural(used, 'tool')
    ]
      .filter(Boolean)
      .join(' · ');
    const shown = el('span', 'rlm-step-summary', summary);
    shown.title = summary; // cut short in a narrow panel
    head.appendChild(shown);
    const controller = this.controller;
    const other = controller?.log.active ?? null;
    if (controller?.connected && canContinueFrom(run, step.step, other !== null && other.status === 'running')) {
      const resume = el('button', 'rlm-step-continue', '⤷ Continue from here');
      resume.dataset.rlmControl = 'continue';
      resume.title =
        'A new run from this step: the steps before it run again in the kernel (their sub-calls answered ' +
        'from the recording, so none is paid twice), and the root proposes this step again';
      resume.addEventListener('click', () => {
        void controller.continueFrom(run.runId, step.step);
      });
      head.appendChild(resume);
    }
    item.appendChild(head);
    if (open && step.tools.length > 0) {
      const tools = renderTools(step.tools);
      tools.classList.add('rlm-code-tools');
      tools.title = 'Tool calls of the step’s code';
      item.appendChild(tools);
    }
    if (open && step.calls.length > 0) {
      const calls = el('ul', 'rlm-calls');
      step.calls.forEach(call => calls.appendChild(this.renderCall(call)));
      item.appendChild(calls);
    }
    return item;
  }

  private renderCall(call: CallView): HTMLElement {
    const item = el('li', `rlm-call rlm-status-${call.status}`);
    item.dataset.callId = call.callId;
    item.dataset.status = call.status;
    item.appendChild(el('span', 'rlm-call-status', `${STATUS_MARK[call.status] ?? ''} ${call.status}`));
    const kind = call.kind === 'llm' ? '' : call.kind === 'rlm' ? ' (rlm_query)' : ` (child root, depth ${call.depth})`;
    item.appendChild(el('span', 'rlm-call-model', `${call.model}${kind}`));
    if (call.status !== 'running') {
      item.appendChild(
        el('span', 'rlm-call-tokens', `${formatTokens(call.inputTokens)} in / ${formatTokens(call.outputTokens)} out`)
      );
      item.appendChild(el('span', 'rlm-call-latency', formatSeconds(call.latencyS)));
      item.appendChild(el('span', 'rlm-call-cost', call.kind === 'rlm' ? '' : formatCost(call.cost)));
    }
    const tip = [call.prompt && `prompt: ${call.prompt}`, call.response && `reply: ${call.response}`, call.error && `error: ${call.error}`]
      .filter(Boolean)
      .join('\n\n');
    item.title = tip;
    if (call.images.length > 0) {
      item.appendChild(renderImages(call.images));
    }
    if (call.tools.length > 0) {
      item.appendChild(renderTools(call.tools));
    }
    return item;
  }
}

function errorLine(error: string | null): HTMLElement {
  const end = el('div', 'rlm-run-error', error ?? 'Ended without an answer');
  end.title = end.textContent ?? '';
  return end;
}

/** The answer rendered from its Markdown (safe.ts: elements of a short list and text, no HTML). */
function renderAnswer(answer: string): HTMLElement {
  const end = el('div', 'rlm-run-answer');
  end.appendChild(el('span', 'rlm-run-answer-label', 'Answer: '));
  const body = el('div', 'rlm-run-answer-body');
  body.append(...markdownDom(markdownNodes(answer)));
  end.appendChild(body);
  end.title = answer;
  return end;
}

function markdownDom(nodes: MarkdownNode[]): Node[] {
  return nodes.map(node => {
    if (typeof node === 'string') {
      return document.createTextNode(node);
    }
    const element = document.createElement(node.tag);
    if (node.href !== undefined && element instanceof HTMLAnchorElement) {
      element.href = node.href;
      element.target = '_blank';
      element.rel = 'noopener noreferrer';
    }
    element.append(...markdownDom(node.children));
    return element;
  });
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** A sub-call's images: each a thumbnail where its record holds one, else its size as text. */
function renderImages(images: ImageRecord[]): HTMLElement {
  const row = el('div', 'rlm-call-images', `↳ ${images.length} image(s): `);
  for (const image of images.slice(0, IMAGES_SHOWN)) {
    if (image.thumbnail === null) {
      row.appendChild(el('span', 'rlm-call-image', `[${image.about}]`));
    } else {
      const thumbnail = el('img', 'rlm-call-image');
      thumbnail.src = image.thumbnail;
      thumbnail.alt = image.about;
      thumbnail.title = image.about;
      row.appendChild(thumbnail);
    }
  }
  if (images.length > IMAGES_SHOWN) {
    row.appendChild(el('span', 'rlm-call-image', `+${images.length - IMAGES_SHOWN} more`));
  }
  return row;
}

/** Tool calls, one a line: what was called (arguments in short), and what it gave or its error. */
function renderTools(tools: ToolView[]): HTMLUListElement {
  const list = el('ul', 'rlm-tools');
  for (const tool of tools) {
    const status = tool.error === null ? 'done' : 'error';
    const item = el('li', `rlm-tool rlm-status-${status}`);
    item.dataset.tool = tool.tool;
    item.dataset.status = status;
    item.appendChild(el('span', 'rlm-tool-call', `↳ ${toolCallText(tool)}`));
    item.appendChild(el('span', 'rlm-tool-outcome', toolOutcome(tool)));
    const gave = tool.error ?? tool.resultPreview;
    item.title = `${tool.tool} ${tool.arguments}${gave ? `\n→ ${gave}` : ''}`;
    list.appendChild(item);
  }
  return list;
}
