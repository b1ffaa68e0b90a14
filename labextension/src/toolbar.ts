/**
 * Toolbar items of an RLM Python notebook: mode (auto, confirm-risky, step), regenerate,
 * pause/resume, stop, and a one-line status of the panel's active run. Plain DOM buttons with
 * JupyterLab's toolbar classes, so the labels can change as the run does. (Undo a run is a
 * command, in the palette and the cells' context menu: the toolbar keeps room for the status.)
 */

import { Widget } from '@lumino/widgets';

import { MODE_TEXT, nextMode, toolbarState } from './decisions';
import type { RlmNotebook } from './notebook';
import { formatTally } from './format';

class ActionButton extends Widget {
  readonly button: HTMLButtonElement;
  private labelNode: HTMLSpanElement;

  constructor(name: string, onClick: () => void) {
    super();
    this.addClass('jp-ToolbarButton');
    this.addClass('rlm-toolbar-item');
    this.node.dataset.rlmControl = name;
    this.button = document.createElement('button');
    this.button.className = 'jp-ToolbarButtonComponent jp-mod-minimal jp-Button';
    this.button.type = 'button';
    this.labelNode = document.createElement('span');
    this.labelNode.className = 'jp-ToolbarButtonComponent-label';
    this.button.appendChild(this.labelNode);
    this.button.addEventListener('click', () => {
      if (!this.button.disabled) {
        onClick();
      }
    });
    // Keep the notebook's focus (and edit mode) when a button is pressed.
    this.button.addEventListener('mousedown', event => event.preventDefault());
    this.node.appendChild(this.button);
  }

  set(label: string, title: string, enabled: boolean, pressed = false): void {
    this.labelNode.textContent = label;
    this.button.title = title;
    // A disabled button gets no pointer events, so its tooltip would never show: the item has it too.
    this.node.title = title;
    this.button.disabled = !enabled;
    this.button.classList.toggle('lm-mod-toggled', pressed);
    this.button.setAttribute('aria-pressed', String(pressed));
  }
}

class StatusText extends Widget {
  constructor() {
    super();
    this.addClass('rlm-toolbar-status');
    this.addClass('rlm-toolbar-item');
    this.node.dataset.rlmControl = 'status';
  }

  set(text: string, title: string): void {
    this.node.textContent = text;
    this.node.title = title;
  }
}

/** Adds the items to the panel's toolbar and keeps them in step with the controller. */
export function addToolbarItems(controller: RlmNotebook): void {
  const toolbar = controller.panel.toolbar;
  const mode = new ActionButton('mode', () => controller.toggleMode());
  const pause = new ActionButton('pause', () => controller.togglePause());
  const regenerate = new ActionButton('regenerate', () => controller.regenerate());
  const stop = new ActionButton('stop', () => controller.stop());
  const status = new StatusText();
  // The status first: a narrow toolbar moves its last items into the overflow menu ("…"), and
  // the buttons are there too; where the run stands stays in sight.
  const items: Array<[string, Widget]> = [
    ['rlm-status', status],
    ['rlm-mode', mode],
    ['rlm-regenerate', regenerate],
    ['rlm-pause', pause],
    ['rlm-stop', stop]
  ];
  let after = 'cellType';
  for (const [name, widget] of items) {
    if (!toolbar.insertAfter(after, name, widget)) {
      toolbar.addItem(name, widget);
    }
    after = name;
  }

  const update = (): void => {
    const active = controller.log.active;
    const state = toolbarState(controller.connected, active, controller.nextRunMode);
    for (const [, widget] of items) {
      widget.setHidden(!state.visible);
    }
    const next = nextMode(state.mode);
    const which = state.enabled ? 'this run' : 'the next run';
    mode.set(
      `Mode: ${state.mode}`,
      `RLM mode of ${which}: ${state.mode} (${MODE_TEXT[state.mode]}). Click for ${next}.`,
      state.modeEnabled,
      state.mode !== 'auto'
    );
    const regenerable = state.enabled && active !== null && active.waitingFor !== null && active.canRegenerate;
    regenerate.set(
      'Regenerate',
      regenerable
        ? `Ask the root for another proposal for step ${active.waitingFor} (this one is kept in the trajectory as rejected)`
        : 'Regenerate: asks the root again for a step that waits for you, before any code of its reply ran',
      regenerable,
      false
    );
    pause.set(
      state.paused ? 'Resume' : 'Pause',
      state.paused ? 'Resume the RLM run' : 'Pause the RLM run before its next action',
      state.enabled,
      state.paused
    );
    stop.set('Stop', 'Stop the RLM run (cancels sub-calls in flight)', state.enabled);
    if (active === null) {
      status.set('RLM: idle', 'No RLM run in progress in this notebook');
    } else {
      const steps = active.steps.length;
      const waiting = active.waitingFor !== null ? ` · waiting for step ${active.waitingFor}` : '';
      status.set(
        `RLM: ${active.paused ? 'paused' : active.status}, ${steps} step${steps === 1 ? '' : 's'}${waiting}`,
        `Run ${active.runId}\n${formatTally(active.totals)}`
      );
    }
  };
  controller.changed.connect(update);
  update();
}
