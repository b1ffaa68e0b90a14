/**
 * A `%%rlm` cell holds a question in prose (with `{name}` placeholders), not Python: its editor
 * highlights it as Markdown, so `for`, `in` or `if` in a sentence are not shown as keywords.
 *
 * How: an editor extension (IEditorExtensionRegistry) for cell and console editors puts, at the
 * highest precedence, JupyterLab's own Markdown language in CodeMirror's `language` facet while
 * the editor's text starts with `%%rlm`, and nothing otherwise. The facet takes its first value,
 * so the kernel's language (Python) comes back as soon as the magic line goes. The switch rides
 * on the edit's own transaction (a transaction extender reconfigures a compartment), and the
 * cell's mimetype is left alone: the kernel, the completer and the rest of JupyterLab still see a
 * Python cell. (A provider of the facet that computes no value would still enable its parser
 * state, which then has no language: hence a compartment that is empty, not an empty value.)
 */

import { language, type Language } from '@codemirror/language';
import { Compartment, EditorState, type Extension, Prec, type Text } from '@codemirror/state';
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { EditorExtensionRegistry, IEditorExtensionRegistry, IEditorLanguageRegistry } from '@jupyterlab/codemirror';

/** IPython takes a cell magic after leading blank lines and indentation; `%%rlmx` is another magic. */
const RLM_MAGIC = /^\s*%%rlm(?![\w-])/;
/** As much of the text as the magic can be found in: a long cell is not scanned whole on each key. */
const HEAD = 4096;

/** Whether a cell's source is a `%%rlm` cell. */
export function isRlmCell(source: string): boolean {
  return RLM_MAGIC.test(source.slice(0, HEAD));
}

function startsRlm(doc: Text): boolean {
  return isRlmCell(doc.sliceString(0, HEAD));
}

/** The editor extension for an editor that starts with `source`: `prose` is its language while
 * its text is a `%%rlm` cell. */
export function rlmCellLanguage(prose: Language, source: string): Extension {
  const slot = new Compartment();
  const forCell = (rlm: boolean): Extension => (rlm ? Prec.highest(language.of(prose)) : []);
  return [
    slot.of(forCell(isRlmCell(source))),
    EditorState.transactionExtender.of(tr => {
      if (!tr.docChanged) {
        return null;
      }
      const rlm = startsRlm(tr.newDoc);
      return rlm === startsRlm(tr.startState.doc) ? null : { effects: slot.reconfigure(forCell(rlm)) };
    })
  ];
}

export const highlightPlugin: JupyterFrontEndPlugin<void> = {
  id: 'rlm-kernel-labextension:rlm-cell-highlighting',
  description: "Highlights a %%rlm cell's question as Markdown, not as Python.",
  autoStart: true,
  requires: [IEditorExtensionRegistry, IEditorLanguageRegistry],
  activate: async (
    _app: JupyterFrontEnd,
    extensions: IEditorExtensionRegistry,
    languages: IEditorLanguageRegistry
  ): Promise<void> => {
    const markdown = await languages.getLanguage('text/x-markdown');
    const prose = markdown?.support?.language;
    if (!prose) {
      console.warn('rlm-kernel: no Markdown language in the editor; %%rlm cells keep Python highlighting');
      return;
    }
    extensions.addExtension({
      name: 'rlm-kernel:rlm-cell-language',
      // Inline editors are the notebook's cells and the console's prompt, where %%rlm runs.
      factory: options =>
        options.inline
          ? EditorExtensionRegistry.createImmutableExtension(
              rlmCellLanguage(prose, options.model.sharedModel.getSource())
            )
          : null
    });
  }
};
