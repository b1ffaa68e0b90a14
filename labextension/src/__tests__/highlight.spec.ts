import { markdownLanguage } from '@codemirror/lang-markdown';
import { python, pythonLanguage } from '@codemirror/lang-python';
import { ensureSyntaxTree, language } from '@codemirror/language';
import { EditorState } from '@codemirror/state';

import { isRlmCell, rlmCellLanguage } from '../highlight';

// The plugin's JupyterLab tokens are not needed for the editor extension itself.
jest.mock('@jupyterlab/codemirror', () => ({}));

describe('which cells are %%rlm cells', () => {
  it.each([
    ['%%rlm -c doc\nHow many {kind} lines?', true],
    ['%%rlm\nq', true],
    ['%%rlm', true],
    ['\n\n  %%rlm -c doc\nq', true], // IPython drops leading blank lines and indentation
    ['%%rlmx\nq', false], // another magic
    ['%%rlm-ish\nq', false],
    ['%rlm doc q', false], // the line magic's question is on its own line of Python
    ['x = 1\n%%rlm -c doc\nq', false], // a cell magic only counts on the first line
    ['# %%rlm\nfor x in y: pass', false],
    ['', false]
  ])('%p: %p', (source, expected) => {
    expect(isRlmCell(source)).toBe(expected);
  });
});

/** A Python editor's state, as JupyterLab configures one, with the extension added. */
function editor(doc: string): EditorState {
  return EditorState.create({ doc, extensions: [python(), rlmCellLanguage(markdownLanguage, doc)] });
}

function nodeAt(state: EditorState, text: string): string {
  const tree = ensureSyntaxTree(state, state.doc.length, 5000)!;
  return tree.resolveInner(state.doc.toString().indexOf(text) + 1, 1).name;
}

describe('the language of a cell', () => {
  const question = '%%rlm -c doc\nfor each {region}, which supplier is in the list?';

  it('is Markdown for a %%rlm cell: its words are prose, not keywords', () => {
    const state = editor(question);
    expect(state.facet(language)).toBe(markdownLanguage);
    expect(nodeAt(state, 'for each')).not.toBe('for');
    expect(nodeAt(state, ' in the')).not.toBe('in');
  });

  it('leaves the language alone for any other cell, even with no language of its own yet', () => {
    const state = EditorState.create({ doc: 'x = 1', extensions: rlmCellLanguage(markdownLanguage, 'x = 1') });
    expect(state.facet(language)).toBeNull(); // JupyterLab loads the kernel's language later
    expect(ensureSyntaxTree(state, state.doc.length, 5000)?.type.name).not.toBe('Document');
    const rlm = state.update({ changes: { from: 0, insert: '%%rlm\n' } }).state;
    expect(rlm.facet(language)).toBe(markdownLanguage);
    expect(rlm.update({ changes: { from: 0, to: 6 } }).state.facet(language)).toBeNull();
  });

  it('stays Python for any other cell', () => {
    const state = editor('for x in items:\n    print(x)');
    expect(state.facet(language)).toBe(pythonLanguage);
    expect(nodeAt(state, 'for x')).toBe('for');
  });

  it('follows the first line as the cell is edited', () => {
    let state = editor('x = 1\nfor y in z: pass');
    expect(state.facet(language)).toBe(pythonLanguage);
    state = state.update({ changes: { from: 0, to: 5, insert: '%%rlm -c doc' } }).state;
    expect(state.facet(language)).toBe(markdownLanguage);
    state = state.update({ changes: { from: 0, to: 1, insert: '' } }).state; // now a line magic
    expect(state.facet(language)).toBe(pythonLanguage);
    expect(nodeAt(state, 'for y')).toBe('for');
  });
});
