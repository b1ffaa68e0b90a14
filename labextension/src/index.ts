/**
 * rlm-kernel-labextension: notebooks on the RLM Python kernel get each root-LM step as a cell.
 *
 * One `RlmNotebook` controller per notebook panel owns that panel's comm (target `rlm_kernel`,
 * docs/protocol.md); the toolbar items act on their own panel; the side panel and the commands
 * follow the current notebook.
 */

import { ILayoutRestorer, type JupyterFrontEnd, type JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, ISessionContextDialogs, InputDialog } from '@jupyterlab/apputils';
import { INotebookCellExecutor, INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator } from '@jupyterlab/translation';

import { highlightPlugin } from './highlight';
import { RlmNotebook } from './notebook';
import { RunsPanel } from './panel';
import { addToolbarItems } from './toolbar';

export { RlmNotebook } from './notebook';

const PLUGIN_ID = 'rlm-kernel-labextension:plugin';

export const CommandIDs = {
  toggleMode: 'rlm-kernel:toggle-mode',
  togglePause: 'rlm-kernel:toggle-pause',
  regenerate: 'rlm-kernel:regenerate',
  stop: 'rlm-kernel:stop',
  undoRun: 'rlm-kernel:undo-run',
  hint: 'rlm-kernel:hint',
  showRuns: 'rlm-kernel:show-runs'
} as const;

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Root-LM steps as notebook cells, and a panel of RLM runs, for the RLM Python kernel.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [INotebookCellExecutor, ISessionContextDialogs, ITranslator, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    executor: INotebookCellExecutor | null,
    sessionDialogs: ISessionContextDialogs | null,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const controllers = new WeakMap<NotebookPanel, RlmNotebook>();
    const runsPanel = new RunsPanel();
    app.shell.add(runsPanel, 'right', { rank: 700 });
    restorer?.add(runsPanel, runsPanel.id);

    tracker.widgetAdded.connect((_, panel) => {
      const controller = new RlmNotebook(panel, { executor, sessionDialogs, translator });
      controllers.set(panel, controller);
      addToolbarItems(controller);
      if (tracker.currentWidget === panel) {
        runsPanel.setController(controller);
      }
    });
    tracker.currentChanged.connect((_, panel) => {
      runsPanel.setController(panel ? (controllers.get(panel) ?? null) : null);
    });

    const current = (): RlmNotebook | null => {
      const panel = tracker.currentWidget;
      return panel ? (controllers.get(panel) ?? null) : null;
    };
    const duringRun = (): boolean => {
      const controller = current();
      return controller !== null && controller.connected && controller.log.active !== null;
    };
    app.commands.addCommand(CommandIDs.toggleMode, {
      label: 'RLM: Next Mode (auto, confirm-risky, step)',
      isEnabled: duringRun,
      execute: () => current()?.toggleMode()
    });
    app.commands.addCommand(CommandIDs.togglePause, {
      label: 'RLM: Pause or Resume the Current Run',
      isEnabled: duringRun,
      execute: () => current()?.togglePause()
    });
    app.commands.addCommand(CommandIDs.regenerate, {
      label: 'RLM: Regenerate the Waiting Step',
      isEnabled: () => {
        const run = current()?.log.active ?? null;
        return duringRun() && run !== null && run.waitingFor !== null && run.canRegenerate;
      },
      execute: () => current()?.regenerate()
    });
    app.commands.addCommand(CommandIDs.stop, {
      label: 'RLM: Stop the Current Run',
      isEnabled: duringRun,
      execute: () => current()?.stop()
    });
    app.commands.addCommand(CommandIDs.undoRun, {
      label: 'RLM: Undo Run',
      caption:
        'Remove the cells an RLM run inserted (the active cell\'s run, else the latest), after a confirmation. ' +
        'Variables are not restored.',
      isEnabled: () => current()?.canUndo ?? false,
      execute: async () => {
        await current()?.undoRun();
      }
    });
    app.contextMenu.addItem({ command: CommandIDs.undoRun, selector: '.jp-Notebook .jp-Cell', rank: 20 });
    app.commands.addCommand(CommandIDs.hint, {
      label: 'RLM: Send a Hint to the Current Run…',
      isEnabled: duringRun,
      execute: async args => {
        const controller = current();
        if (controller === null) {
          return;
        }
        let text = typeof args.text === 'string' ? args.text : null;
        if (text === null) {
          const answer = await InputDialog.getText({
            title: 'Hint for the root LM',
            label: "The root's next turn carries it (like %rlm hint).",
            placeholder: 'look at chapter 3'
          });
          text = answer.button.accept ? answer.value : null;
        }
        if (text) {
          controller.hint(text);
        }
      }
    });
    app.commands.addCommand(CommandIDs.showRuns, {
      label: 'RLM: Show Runs Panel',
      execute: () => app.shell.activateById(runsPanel.id)
    });
    if (palette) {
      for (const command of Object.values(CommandIDs)) {
        palette.addItem({ command, category: 'RLM' });
      }
    }
  }
};

export default [plugin, highlightPlugin];
