import { answerCell } from '../decisions';
import { isEvent, parseKernelMsg, savedEvents, type RunFinishedMsg } from '../protocol';
import { markdownText } from '../safe';
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
