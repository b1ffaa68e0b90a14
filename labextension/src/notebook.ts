/**
 * One per notebook panel: the `rlm_kernel` comm with that panel's kernel, the run log fed by
 * it, and the cells it inserts and runs. Nothing here looks at "the current notebook": every
 * action goes to the panel this controller was made for.
 */

import {
  Dialog,
  Notification,
  showDialog,
  type ISessionContext,
  type ISessionContextDialogs
} from '@jupyterlab/apputils';
import { MarkdownCell, type Cell } from '@jupyterlab/cells';
import { NotebookActions, runCell, type INotebookCellExecutor, type NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { ITranslator } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';

import { decorateCell } from './cells';
import type { KernelSeen } from './format';
import {
  answerCell,
  cellRunId,
  commAction,
  editedMeta,
  humanCellMeta,
  isRlmKernel,
  nextMode,
  onProposal,
  onReproposal,
  placeIndex,
  proposalIndex,
  sameProposalText,
  stepCellMeta,
  takesHumanMeta,
  undoDialog,
  undoKept,
  undoPlan,
  undoRunId,
  type CellInfo,
  type UndoPlan
} from './decisions';
import {
  COMM_TARGET,
  isProposedMeta,
  openData,
  parseKernelMsg,
  readCellMeta,
  savedEvents,
  savedMode,
  versionProblem,
  type EventsMsg,
  type FrontendMsg,
  type KernelMsg,
  type Mode,
  type ProposeStepMsg,
  type RunFinishedMsg,
  type StepExecutedMsg
} from './protocol';
import { ProposalReview, attachReview } from './review';
import { canContinueFrom, continueSource } from './rewind';
import { RunLog } from './runs';

/** A cell of the notebook's shared model. */
type SharedCell = NonNullable<NotebookPanel['content']['model']>['sharedModel']['cells'][number];

/** The metadata of each of a cell's outputs (a `%%rlm` cell's output keeps its run's trajectory). */
function outputsMetadata(cell: SharedCell): unknown[] {
  return ((cell.toJSON() as { outputs?: Array<{ metadata?: unknown }> }).outputs ?? []).map(o => o.metadata);
}

/** A new proposal shown as a diff under its step's cell (Regenerate), until accepted or rejected. */
interface Review {
  msg: ProposeStepMsg;
  /** The code the cell keeps meanwhile (the earlier proposal). */
  kept: string;
  widget: ProposalReview;
  /** Stops watching the cell's source. */
  release: () => void;
}

export interface IRlmNotebookOptions {
  executor?: INotebookCellExecutor | null;
  sessionDialogs?: ISessionContextDialogs | null;
  translator?: ITranslator | null;
}

export class RlmNotebook implements IDisposable {
  readonly log = new RunLog();
  /** Emitted (at most once a frame) when the log, the connection or the cells changed. */
  readonly changed = new Signal<this, void>(this);

  private comm: Kernel.IComm | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private kernelIsRlm = false;
  /** A kernel that speaks another protocol: not asked again until the notebook's kernel changes. */
  private refused: Kernel.IKernelConnection | null = null;
  private generation = 0;
  /** A kernel without notebook mode (stock python3) whose magics' runs we hear of: see `announced`. */
  private announcing: Kernel.IKernelConnection | null = null;
  private frame = 0;
  private _isDisposed = false;
  /** The run whose waiting step Regenerate asked to propose again, until the proposal comes. */
  private regenerating: string | null = null;
  /** Regenerate's reviews on show, by cell id. */
  private reviews = new Map<string, Review>();

  constructor(
    readonly panel: NotebookPanel,
    private options: IRlmNotebookOptions = {}
  ) {
    const session = panel.sessionContext;
    session.kernelChanged.connect(this.onKernelChanged, this);
    session.statusChanged.connect(this.onStatusChanged, this);
    NotebookActions.executionScheduled.connect(this.onExecutionScheduled, this);
    this.log.onChange(() => this.scheduleUpdate());
    panel.context.ready.then(() => this.notebookLoaded()).catch(console.error);
    panel.context.pathChanged.connect(() => this.scheduleUpdate(), this); // the panel shows the name
    session.ready.then(() => this.sync()).catch(console.error);
    panel.disposed.connect(() => this.dispose());
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Whether the comm is open: the kernel is RLM Python and welcomed us. */
  get connected(): boolean {
    return this.comm !== null;
  }

  /** The notebook's kernel, for the side panel to name: null when it has none. */
  get kernelSeen(): KernelSeen | null {
    const kernel = this.panel.sessionContext.session?.kernel ?? null;
    return kernel === null ? null : { name: this.panel.sessionContext.kernelDisplayName, isRlm: this.kernelIsRlm };
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    for (const cellId of [...this.reviews.keys()]) {
      this.dropReview(cellId);
    }
    this.drop(true);
    this.listen(null);
    cancelAnimationFrame(this.frame);
    Signal.clearData(this);
  }

  // -- controls (toolbar, commands) -----------------------------------------------------------

  /** The mode the next run gets (the kernel is told at once, and keeps it for that run). */
  nextRunMode: Mode = 'auto';

  setMode(mode: Mode): void {
    const run = this.log.active;
    if (run !== null && run.status === 'running') {
      this.send({ type: 'set_mode', run_id: run.runId, mode });
    } else {
      this.nextRunMode = mode;
      this.send({ type: 'set_mode', run_id: null, mode });
      this.scheduleUpdate();
    }
  }

  toggleMode(): void {
    const run = this.log.active;
    this.setMode(nextMode(run !== null && run.status === 'running' ? run.mode : this.nextRunMode));
  }

  /** Step mode: ask the root for another proposal for the step that waits (none of its reply ran). */
  regenerate(): void {
    const run = this.log.active;
    if (run !== null && run.waitingFor !== null && run.canRegenerate) {
      run.canRegenerate = false; // one request at a time; the kernel's next run_state says again
      this.regenerating = run.runId;
      this.send({ type: 'regenerate', run_id: run.runId, step: run.waitingFor });
      this.scheduleUpdate();
    }
  }

  togglePause(): void {
    const run = this.log.active;
    if (run !== null) {
      this.send({ type: run.paused ? 'resume' : 'pause', run_id: run.runId });
    }
  }

  stop(): void {
    const run = this.log.active;
    if (run !== null) {
      this.send({ type: 'stop', run_id: run.runId });
      // A busy kernel (a step's cell running) reads comm messages only when the cell ends; an
      // interrupt ends the step now, and the kernel stops the run when it sees the interrupt.
      const kernel = this.panel.sessionContext.session?.kernel;
      if (kernel?.status === 'busy') {
        kernel.interrupt().catch(console.error);
      }
    }
  }

  hint(text: string): void {
    const run = this.log.active;
    if (run !== null && text.trim()) {
      this.send({ type: 'hint', run_id: run.runId, text: text.trim() });
    }
  }

  /** Select a step's cell and scroll to it (from the side panel). */
  async revealStep(runId: string, step: number): Promise<boolean> {
    const known = this.log.get(runId)?.steps.find(s => s.step === step)?.cellId ?? null;
    const notebook = this.panel.content;
    let index = known === null ? -1 : notebook.widgets.findIndex(c => c.model.id === known);
    if (index === -1) {
      index = notebook.widgets.findIndex(c => {
        const meta = readCellMeta(c.model.getMetadata('rlm'));
        return meta !== null && meta.run_id === runId && 'step' in meta && meta.step === step;
      });
    }
    if (index === -1) {
      return false;
    }
    notebook.mode = 'command';
    notebook.activeCellIndex = index;
    notebook.deselectAll();
    await notebook.scrollToItem(index, 'center');
    this.panel.activate();
    return true;
  }

  /**
   * Rewind: a `%%rlm` cell that continues a finished run from one of its root steps, below the
   * run's last cell, run at once (rewind.ts). False when the run's `%%rlm` cell is gone.
   */
  async continueFrom(runId: string, step: number): Promise<boolean> {
    const model = this.panel.content.model;
    const run = this.log.get(runId);
    const magic = this.magicCellOf(runId);
    const source = magic === null ? null : continueSource(magic.getSource(), runId, step);
    if (model === null || run === undefined || source === null || !canContinueFrom(run, step, this.log.active !== null)) {
      Notification.warning(`Cannot continue run ${runId} from step ${step}: its %%rlm cell is gone, or a run is going.`, {
        autoClose: 5000
      });
      return false;
    }
    const cells = model.sharedModel.cells;
    const last = Math.max(
      ...cells.map((c, i) => (c === magic || readCellMeta(c.getMetadata('rlm'))?.run_id === runId ? i : -1))
    );
    const shared = model.sharedModel.insertCell(last + 1, { cell_type: 'code', source, metadata: {} });
    const cell = this.cellWidget(shared.getId());
    if (cell === undefined) {
      return false;
    }
    const notebook = this.panel.content;
    notebook.deselectAll();
    notebook.activeCellIndex = last + 1;
    await notebook.scrollToItem(last + 1, 'center');
    await this.runStepCell(cell);
    return true;
  }

  /** The notebook's cells as Undo sees them. */
  private cellInfos(): CellInfo[] {
    const cells = this.panel.content.model?.sharedModel.cells ?? [];
    return cells.map(c => ({ id: c.getId(), meta: readCellMeta(c.getMetadata('rlm')), source: c.getSource() }));
  }

  /** Whether a run has cells Undo could remove (the toolbar's button; the active cell aside). */
  get canUndo(): boolean {
    return undoRunId([], this.log.runs.map(r => r.runId), this.cellInfos()) !== null;
  }

  /**
   * The run Undo acts on now (the active cell's run, else the notebook's latest), the cells it
   * would remove, and whether that run is still going; null when no run has cells here.
   */
  undoTarget(): { plan: UndoPlan; running: boolean } | null {
    const cells = this.cellInfos();
    const active = this.panel.content.activeCell?.model.id ?? null;
    const activeMeta = cells.find(c => c.id === active)?.meta ?? null;
    const runs = this.log.runs;
    // The active cell's run: the one its metadata names, else those its `%%rlm` cell started.
    const candidates =
      activeMeta !== null
        ? [activeMeta.run_id]
        : runs.filter(r => active !== null && r.cellId === active).map(r => r.runId);
    const runId = undoRunId(
      candidates,
      runs.map(r => r.runId),
      cells
    );
    if (runId === null) {
      return null;
    }
    const run = this.log.get(runId);
    return {
      plan: undoPlan(runId, cells, run?.cellId ?? null),
      running: this.log.activeRunId === runId && run?.status === 'running'
    };
  }

  /**
   * Undo a run: after a confirmation, remove the cells it inserted (its steps and its answer),
   * never a human's cell or its `%%rlm` cell. The kernel's variables stay as the run left them.
   */
  async undoRun(): Promise<boolean> {
    const target = this.undoTarget();
    if (target === null) {
      Notification.info('No RLM run has cells in this notebook: nothing to undo.', { autoClose: 4000 });
      return false;
    }
    const text = undoDialog(target.plan, target.running);
    const result = await showDialog({
      title: text.title,
      body: text.body,
      buttons:
        text.accept === null
          ? [Dialog.okButton()]
          : [Dialog.cancelButton(), Dialog.warnButton({ label: text.accept })]
    });
    const model = this.panel.content.model;
    if (text.accept === null || !result.button.accept || model === null) {
      return false;
    }
    // Read the cells again: the notebook may have changed while the dialog was open.
    const runId = target.plan.runId;
    const run = this.log.get(runId);
    if (this.log.activeRunId === runId && run?.status === 'running') {
      return false;
    }
    const plan = undoPlan(runId, this.cellInfos(), run?.cellId ?? null);
    const gone = new Set(plan.cellIds);
    const kept = new Set(undoKept(plan, this.cellInfos()));
    for (const cellId of gone) {
      this.dropReview(cellId);
    }
    const shared = model.sharedModel;
    shared.transact(() => {
      for (let i = shared.cells.length - 1; i >= 0; i--) {
        const cell = shared.cells[i];
        if (gone.has(cell.getId())) {
          shared.deleteCell(i);
        } else if (kept.has(cell.getId())) {
          cell.deleteMetadata('rlm'); // the human's cell stays, no longer a step of a run that is gone
        }
      }
    });
    this.log.forget(runId); // the runs panel lists no step whose cell is gone
    this.scheduleUpdate(true);
    return true;
  }

  /** A run's `%%rlm` cell: the one the kernel named, else the one whose output saved its trajectory. */
  private magicCellOf(runId: string): SharedCell | null {
    const cells = this.panel.content.model?.sharedModel.cells ?? [];
    const known = this.log.get(runId)?.cellId ?? null;
    const found = known === null ? undefined : cells.find(c => c.getId() === known);
    if (found !== undefined) {
      return found;
    }
    const started = (metadata: unknown): boolean =>
      savedEvents(metadata).some(e => e.kind === 'run_started' && e.run_id === runId);
    return cells.find(cell => outputsMetadata(cell).some(started)) ?? null;
  }

  // -- the comm ------------------------------------------------------------------------------

  private onKernelChanged(): void {
    void this.sync();
  }

  private onStatusChanged(_: ISessionContext, status: Kernel.Status): void {
    if (this.kernel !== (this.panel.sessionContext.session?.kernel ?? null)) {
      void this.sync();
      return;
    }
    if (status === 'restarting' || status === 'autorestarting') {
      this.refused = null; // the package may have been reinstalled: ask the new process again
    }
    this.apply(commAction(this.comm !== null, this.kernelIsRlm, status));
  }

  /** Catch up with the panel's kernel: which it is, whether it speaks RLM, whether to open. */
  private async sync(): Promise<void> {
    const kernel = this.panel.sessionContext.session?.kernel ?? null;
    if (kernel !== this.kernel) {
      this.drop(true);
      this.kernel = kernel;
      this.kernelIsRlm = false;
      const generation = ++this.generation;
      let spec: unknown = undefined;
      if (kernel !== null && kernel.name !== 'rlm-python') {
        spec = (await kernel.spec.catch(() => undefined))?.metadata;
      }
      if (generation !== this.generation || this._isDisposed) {
        return; // the kernel changed again while we looked at its spec
      }
      this.kernelIsRlm = kernel !== null && isRlmKernel(kernel.name, spec);
      this.listen(kernel);
    }
    this.apply(commAction(this.comm !== null, this.kernelIsRlm, this.kernel?.status ?? 'unknown'));
    this.scheduleUpdate();
  }

  /**
   * A run shown in its cell (every run of `%load_ext rlm_kernel`'s magics on a stock kernel; a
   * session's question or another executor's run on the RLM Python kernel) has the kernel open the
   * comm itself and say how it goes (run_started, events, run_finished): the runs panel lists the
   * run live, in the mode it runs in. The run stays in its cell: nothing here acts on it.
   */
  private listen(kernel: Kernel.IKernelConnection | null): void {
    if (this.announcing !== null && !this.announcing.isDisposed) {
      this.announcing.removeCommTarget(COMM_TARGET, this.announced);
    }
    this.announcing = kernel;
    kernel?.registerCommTarget(COMM_TARGET, this.announced);
  }

  private announced = (comm: Kernel.IComm, open: KernelMessage.ICommOpenMsg): void => {
    let runId: string | null = null;
    const take = (data: unknown): void => {
      const msg = parseKernelMsg(data);
      if (msg === null || this._isDisposed) {
        return;
      }
      if (msg.type === 'run_started') {
        runId = msg.run_id;
      }
      if ((msg.type === 'run_started' || msg.type === 'events' || msg.type === 'run_finished') && msg.run_id === runId) {
        this.log.applyMessage(msg);
      }
    };
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => take(msg.content.data);
    comm.onClose = () => {
      // Closed before the run said it ended: the kernel went away with it.
      if (runId !== null && this.log.activeRunId === runId) {
        this.log.kernelLost('the kernel closed the connection');
      }
    };
    take(open.content.data);
  };

  private apply(action: 'open' | 'drop' | 'none'): void {
    if (action === 'open') {
      this.open();
    } else if (action === 'drop') {
      // The kernel is restarting or gone: its comms went with it, so there is nothing to close.
      this.drop(false);
    }
  }

  private open(): void {
    const kernel = this.kernel;
    if (kernel === null || kernel.isDisposed || this._isDisposed || kernel === this.refused) {
      return;
    }
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch (error) {
      console.error('rlm-kernel: could not open the comm', error);
      return;
    }
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
      if (this.comm === comm) {
        this.receive(msg.content.data);
      }
    };
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.log.kernelLost('the kernel closed the connection');
      }
    };
    this.comm = comm;
    comm.open({ ...openData() });
    this.scheduleUpdate();
  }

  /** The kernel speaks another protocol: say so once, in one line, and leave its runs in their
   * ``%%rlm`` cells (the kernel's fallback) rather than guess at its messages. */
  private refuse(problem: string): void {
    const comm = this.comm;
    this.comm = null;
    this.refused = this.kernel;
    console.warn(`rlm-kernel: ${problem}`);
    Notification.warning(problem, { autoClose: false });
    try {
      comm?.close();
    } catch {
      // Already gone with its kernel.
    }
    this.scheduleUpdate();
  }

  private drop(close: boolean): void {
    const comm = this.comm;
    this.comm = null;
    if (comm === null) {
      return;
    }
    this.log.kernelLost(close ? 'the notebook left the kernel' : 'the kernel restarted');
    try {
      if (close && !comm.isDisposed && this.kernel !== null && !this.kernel.isDisposed) {
        comm.close();
      }
      comm.dispose();
    } catch {
      // Already gone with its kernel: nothing left to release.
    }
    this.scheduleUpdate();
  }

  private send(msg: FrontendMsg): void {
    if (this.comm !== null && !this.comm.isDisposed) {
      this.comm.send({ ...msg });
    }
  }

  private receive(data: unknown): void {
    const msg = parseKernelMsg(data);
    if (msg === null) {
      return; // a message type (or shape) this version does not know: ignored, as the protocol says
    }
    const problem = msg.type === 'welcome' ? versionProblem(msg.version) : null;
    if (problem !== null) {
      this.refuse(problem);
      return;
    }
    // A proposal seen before (say, sent again after a reconnection) already has its cell; so has
    // one that another view of the notebook inserted, which only the cell's metadata tells.
    const existing =
      msg.type === 'propose_step'
        ? (this.log.proposalCell(msg.run_id, msg.step) ?? this.proposalInModel(msg))
        : null;
    this.log.applyMessage(msg);
    this.act(msg, existing).catch((error: unknown) => console.error('rlm-kernel: failed to handle', msg.type, error));
  }

  private async act(msg: KernelMsg, existing: string | null): Promise<void> {
    switch (msg.type) {
      case 'propose_step':
        if (this.regenerating === msg.run_id) {
          this.regenerating = null;
          if (existing !== null && this.holdsProposal(existing, msg)) {
            // The cell holds this very code already, so nothing in it changes: say so, or the
            // button looks broken.
            Notification.info(sameProposalText(msg), { autoClose: 8000 });
          }
        }
        if (existing !== null) {
          this.placeAgain(existing, msg);
        }
        if (existing !== null && this.holdsProposal(existing, msg)) {
          this.log.bindCell(msg.run_id, msg.step, existing);
          this.send({ type: 'cell_inserted', run_id: msg.run_id, step: msg.step, cell_id: existing });
        } else {
          await this.insertStep(msg);
        }
        break;
      case 'step_executed':
        this.markExecuted(msg);
        break;
      case 'run_finished':
        for (const [cellId, review] of this.reviews) {
          if (review.msg.run_id === msg.run_id) {
            this.dropReview(cellId);
          }
        }
        if (this.log.claimAnswer(msg.run_id)) {
          this.insertAnswer(msg);
        }
        break;
      case 'events':
        this.markHumanSteps(msg);
        this.scheduleUpdate(true);
        break;
      default:
        break;
    }
  }

  // -- cells ---------------------------------------------------------------------------------

  private cellWidget(cellId: string): Cell | undefined {
    return this.panel.content.widgets.find(c => c.model.id === cellId);
  }

  /** Whether the cell is this very proposal's (sent again on reconnecting), not an earlier one's. */
  private holdsProposal(cellId: string, msg: ProposeStepMsg): boolean {
    const cell = this.cellWidget(cellId);
    const meta = cell === undefined ? null : readCellMeta(cell.model.getMetadata('rlm'));
    return isProposedMeta(meta) && meta.proposed === msg.code;
  }

  /** The cell in the shared model that holds this proposal, whichever view inserted it. */
  private proposalInModel(msg: ProposeStepMsg): string | null {
    const cells = this.panel.content.model?.sharedModel.cells ?? [];
    const at = proposalIndex(
      cells.map(c => readCellMeta(c.getMetadata('rlm'))),
      msg
    );
    return at === -1 ? null : cells[at].getId();
  }

  /**
   * A waiting proposal the kernel numbered again (a human's cell ran first and took its number):
   * its cell takes the new number and moves below the cell that ran, so the notebook reads in the
   * order things ran. The cell keeps its code, edited or not, and its id.
   */
  private placeAgain(cellId: string, msg: ProposeStepMsg): void {
    const shared = this.panel.content.model?.sharedModel;
    const from = shared === undefined ? -1 : shared.cells.findIndex(c => c.getId() === cellId);
    if (shared === undefined || from === -1) {
      return;
    }
    const meta = readCellMeta(shared.cells[from].getMetadata('rlm'));
    if (!isProposedMeta(meta) || meta.run_id !== msg.run_id || meta.step >= msg.step) {
      return;
    }
    shared.cells[from].setMetadata('rlm', { ...meta, step: msg.step });
    const review = this.reviews.get(cellId);
    if (review !== undefined) {
      review.msg = { ...review.msg, step: msg.step };
    }
    const to = placeIndex(this.cellInfos(), msg.after_cell_id, msg.run_id, cellId);
    if (to !== from && to !== from + 1) {
      const active = this.panel.content.activeCell?.model.id === cellId;
      shared.moveCell(from, to > from ? to - 1 : to);
      const at = shared.cells.findIndex(c => c.getId() === cellId);
      if (active && at !== -1) {
        this.panel.content.activeCellIndex = at;
      }
    }
    this.scheduleUpdate(true);
  }

  /** Human steps' cells get their step in the metadata, so their badge survives save and reopen. */
  private markHumanSteps(msg: EventsMsg): void {
    const cells = this.panel.content.model?.sharedModel.cells ?? [];
    for (const event of msg.events) {
      if (event.kind !== 'step_started' || event.depth !== 0 || event.author !== 'human') {
        continue;
      }
      const cellId = this.log.get(event.run_id)?.steps.find(s => s.step === event.step)?.cellId;
      const cell = cells.find(c => c.getId() === cellId);
      if (cell !== undefined && takesHumanMeta(readCellMeta(cell.getMetadata('rlm')))) {
        cell.setMetadata('rlm', { ...humanCellMeta(event.run_id, event.step) });
      }
    }
  }

  private async insertStep(msg: ProposeStepMsg): Promise<void> {
    const notebook = this.panel.content;
    const model = notebook.model;
    if (model === null) {
      return;
    }
    const again = this.reproposed(msg);
    const reused = again?.index ?? null;
    const index = reused ?? placeIndex(this.cellInfos(), msg.after_cell_id, msg.run_id);
    const cellId =
      reused !== null
        ? model.sharedModel.cells[reused].getId()
        : model.sharedModel
            .insertCell(index, { cell_type: 'code', source: msg.code, metadata: { rlm: { ...stepCellMeta(msg) } } })
            .getId();
    this.log.bindCell(msg.run_id, msg.step, cellId);
    // Before any execute request for the cell, so the kernel knows it is the step's.
    this.send({ type: 'cell_inserted', run_id: msg.run_id, step: msg.step, cell_id: cellId });
    const cell = this.cellWidget(cellId);
    if (cell === undefined) {
      return;
    }
    decorateCell(cell, this.log);
    if (again !== null && again.kept !== null) {
      this.showReview(cell, again.kept, msg);
    }
    if (onProposal(msg.mode) === 'run') {
      await this.runStepCell(cell);
    } else {
      notebook.deselectAll();
      notebook.activeCellIndex = index;
      await notebook.scrollToItem(index, 'center');
      notebook.mode = 'edit';
    }
  }

  /**
   * A new proposal for a step that has a cell already (Regenerate). A cell the human edited is
   * never written over: the new proposal gets a cell of its own below it (null here). Otherwise
   * the cell is the step's again and its metadata names the new proposal; it takes the new code
   * now when the step runs at once, and else keeps its code (`kept`) while a diff of the two
   * waits for Accept or Reject (onReproposal).
   */
  private reproposed(msg: ProposeStepMsg): { index: number; kept: string | null } | null {
    const cellId = this.log.proposalCell(msg.run_id, msg.step);
    const cells = this.panel.content.model?.sharedModel.cells ?? [];
    const index = cellId === null ? -1 : cells.findIndex(c => c.getId() === cellId);
    if (index < 0) {
      return null;
    }
    const shared = cells[index];
    const source = shared.getSource();
    const kept = this.reviews.get(shared.getId())?.kept ?? null;
    const action = onReproposal(source, readCellMeta(shared.getMetadata('rlm')), msg, kept);
    this.dropReview(shared.getId()); // an earlier diff of the step is out of date either way
    if (action === 'new-cell') {
      return null;
    }
    if (action === 'replace') {
      shared.setSource(msg.code);
    }
    shared.setMetadata('rlm', { ...stepCellMeta(msg) });
    return { index, kept: action === 'review' ? source : null };
  }

  /** Show the new proposal as a diff under the cell that keeps the earlier one. */
  private showReview(cell: Cell, kept: string, msg: ProposeStepMsg): void {
    const cellId = cell.model.id;
    const widget = new ProposalReview({
      step: msg.step,
      before: kept,
      after: msg.code,
      onAccept: () => this.settleReview(cellId, true),
      onReject: () => this.settleReview(cellId, false)
    });
    // Typing in the cell makes it the human's edit, which stands: the diff is set aside.
    const shared = cell.model.sharedModel;
    const onChange = (): void => {
      if (shared.getSource() !== kept) {
        this.dropReview(cellId);
      }
    };
    shared.changed.connect(onChange);
    this.reviews.set(cellId, { msg, kept, widget, release: () => shared.changed.disconnect(onChange) });
    attachReview(cell, widget).catch(console.error);
  }

  /** Accept: the cell takes the new proposal. Reject: it keeps its code, which, run, is an edit. */
  private settleReview(cellId: string, accept: boolean): void {
    const review = this.reviews.get(cellId);
    if (review === undefined) {
      return;
    }
    this.dropReview(cellId);
    const notebook = this.panel.content;
    const index = notebook.widgets.findIndex(c => c.model.id === cellId);
    const cell = notebook.widgets[index] as Cell | undefined;
    if (cell === undefined) {
      return;
    }
    if (accept) {
      cell.model.sharedModel.setSource(review.msg.code);
      cell.model.setMetadata('rlm', { ...stepCellMeta(review.msg) });
    } else {
      cell.model.setMetadata('rlm', { ...stepCellMeta(review.msg), kept: review.kept });
    }
    decorateCell(cell, this.log);
    notebook.deselectAll();
    notebook.activeCellIndex = index;
    notebook.mode = 'edit';
    this.scheduleUpdate();
  }

  private dropReview(cellId: string): void {
    const review = this.reviews.get(cellId);
    if (review !== undefined) {
      this.reviews.delete(cellId);
      review.release();
      review.widget.dispose();
    }
  }

  /**
   * Run a step's cell without touching the selection or the mode (a human may be typing
   * elsewhere). The cell executor sends the cell's id as `cellId` in the request's metadata.
   */
  private async runStepCell(cell: Cell): Promise<void> {
    const notebook = this.panel.content;
    const model = notebook.model;
    if (model === null) {
      return;
    }
    this.log.cellRun(cell.model.id, cell.model.sharedModel.getSource());
    const options: INotebookCellExecutor.IRunCellOptions = {
      cell,
      notebook: model,
      notebookConfig: notebook.notebookConfig,
      onCellExecuted: () => this.scheduleUpdate(),
      onCellExecutionScheduled: () => undefined,
      sessionContext: this.panel.sessionContext,
      sessionDialogs: this.options.sessionDialogs ?? undefined,
      translator: this.options.translator ?? undefined
    };
    try {
      await (this.options.executor ? this.options.executor.runCell(options) : runCell(options));
    } catch (reason) {
      // A step whose code raised is a normal outcome: the kernel reports it to the root.
      if (!(reason instanceof Error && reason.message.startsWith('KernelReplyNotOK'))) {
        throw reason;
      }
    }
  }

  private markExecuted(msg: StepExecutedMsg): void {
    this.dropReview(msg.cell_id); // run without a choice: the kernel took the code as it was
    const cell = this.cellWidget(msg.cell_id);
    if (cell === undefined) {
      return;
    }
    const meta = readCellMeta(cell.model.getMetadata('rlm'));
    if (msg.edited && isProposedMeta(meta)) {
      cell.model.setMetadata('rlm', { ...editedMeta(meta) });
    }
    decorateCell(cell, this.log);
  }

  private insertAnswer(msg: RunFinishedMsg): void {
    const model = this.panel.content.model;
    if (model === null) {
      return;
    }
    const spec = answerCell(msg);
    const index = placeIndex(this.cellInfos(), msg.after_cell_id, msg.run_id);
    const shared = model.sharedModel.insertCell(index, {
      cell_type: 'markdown',
      source: spec.source,
      metadata: { rlm: { ...spec.metadata.rlm } }
    });
    const cell = this.cellWidget(shared.getId());
    if (cell instanceof MarkdownCell) {
      cell.rendered = true;
    }
    if (cell !== undefined) {
      decorateCell(cell, this.log);
    }
  }

  /**
   * A human ran a cell: during a run it is a human step (the kernel's rule), unless it is a step
   * or a cell of another run. The kernel learns which run a cell's metadata names before the
   * execute request, which follows this message on the same channel.
   */
  private onExecutionScheduled(_: unknown, args: { notebook: unknown; cell: Cell }): void {
    if (args.notebook !== this.panel.content || args.cell.model.type !== 'code') {
      return;
    }
    const runId = cellRunId(readCellMeta(args.cell.model.getMetadata('rlm')));
    if (runId !== null) {
      this.send({ type: 'cell_of_run', cell_id: args.cell.model.id, cell_run_id: runId });
    }
    if (runId === null || runId === this.log.activeRunId) {
      this.log.cellRun(args.cell.model.id, args.cell.model.sharedModel.getSource());
    }
  }

  // -- a saved notebook ------------------------------------------------------------------------

  /** Restore runs from the trajectories saved in `%%rlm` cells' outputs, and style RLM cells. */
  private notebookLoaded(): void {
    const model = this.panel.content.model;
    if (model === null) {
      return;
    }
    for (const cell of model.sharedModel.cells) {
      if (cell.cell_type !== 'code') {
        continue;
      }
      for (const metadata of outputsMetadata(cell)) {
        const events = savedEvents(metadata);
        if (events.length > 0) {
          this.log.applySaved(events, savedMode(metadata));
        }
      }
    }
    model.cells.changed.connect(() => this.scheduleUpdate(true), this);
    this.scheduleUpdate(true);
  }

  // -- views ---------------------------------------------------------------------------------

  private redecorate = false;

  /** Coalesce updates to one per frame; `cells` also re-styles every cell. */
  scheduleUpdate(cells = false): void {
    this.redecorate = this.redecorate || cells;
    if (this.frame !== 0 || this._isDisposed) {
      return;
    }
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (this._isDisposed) {
        return;
      }
      if (this.redecorate) {
        this.redecorate = false;
        for (const cell of this.panel.content.widgets) {
          decorateCell(cell, this.log);
        }
      }
      this.changed.emit();
    });
  }
}
