/**
 * LM text in the browser: the front end's half of `rlm_kernel/jupyter/safe.py`.
 *
 * Whatever a run holds is untrusted: answers, code, outputs, prompts, replies, questions, errors,
 * and runs restored from a saved notebook, whoever saved it. A document can carry a prompt
 * injection, and this page can run anything on the user's machine. So:
 *
 * - the DOM gets run text only as text (`textContent`, `title`): no module of this extension
 *   touches `innerHTML` or its relatives (eslint.config.mjs forbids them);
 * - a Markdown cell gets either the kernel's safe Markdown of an answer (`answer_markdown`: no raw
 *   HTML, images only as links, no `javascript:` or `data:` links) or `markdownText`, which
 *   renders as exactly the text it was given;
 * - events read back from a notebook's metadata are checked field by field (`protocol.ts`).
 *
 * Tested against the same payloads as the kernel's half (`tests/data/payloads.json`).
 */

/** Every ASCII punctuation character: CommonMark lets any of them be escaped with a backslash. */
const PUNCTUATION = /[!-/:-@[-`{-~]/g;

/**
 * Text as Markdown that renders as exactly that text: with every punctuation mark escaped, no
 * HTML, link, image, emphasis or math can start in it.
 */
export function markdownText(text: string): string {
  return text.replace(PUNCTUATION, c => `\\${c}`);
}

// -- an answer's Markdown in the side panel -----------------------------------------------------

/** The elements an answer's Markdown may become in the side panel: no image, no raw HTML. */
export type MarkdownTag =
  | 'p'
  | 'h1'
  | 'h2'
  | 'h3'
  | 'h4'
  | 'h5'
  | 'h6'
  | 'ul'
  | 'ol'
  | 'li'
  | 'blockquote'
  | 'pre'
  | 'code'
  | 'strong'
  | 'em'
  | 'del'
  | 'a'
  | 'hr';

/** Text, or an element of the short list with its children; `href` on a link only. */
export type MarkdownNode = string | { tag: MarkdownTag; children: MarkdownNode[]; href?: string };

/** Longer answers are shown as text, as the kernel does (`MAX_MARKDOWN_CHARS` of safe.py). */
export const MAX_MARKDOWN_CHARS = 100_000;

/** Where a link in the panel may go: the web and mail. Others (`javascript:`, `data:`, relative) stay text. */
const LINK_ADDRESS = /^(?:https?|mailto):/i;

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const ITEM = /^ {0,3}([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const QUOTE = /^ {0,3}>[ \t]?(.*)$/;
const LINK = /^(!?)\[((?:[^[\]\\]|\\.)*)\]\(\s*(<[^<>\n]*>|[^\s()]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/;
const AUTOLINK = /^<([a-z][a-z0-9+.-]{1,31}:[^\s<>]*)>/i;

/**
 * An answer's Markdown as a tree of a few elements and text, for the side panel to build with
 * `createElement` and text nodes: raw HTML stays text, an image becomes a link to it (never
 * loaded), a link keeps its address only for `http`, `https` and `mailto`. Covers what answers
 * use (paragraphs, headings, lists, quotes, code, emphasis, links); the rest shows as its text.
 */
export function markdownNodes(source: string): MarkdownNode[] {
  if (source.length > MAX_MARKDOWN_CHARS) {
    return [{ tag: 'p', children: [source] }];
  }
  return blocks(source.replace(/\r\n?/g, '\n').split('\n'));
}

function startsBlock(line: string): boolean {
  return [FENCE, HEADING, RULE, ITEM, QUOTE].some(re => re.test(line));
}

function blocks(lines: string[]): MarkdownNode[] {
  const out: MarkdownNode[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    const heading = HEADING.exec(line);
    if (line.trim() === '') {
      i++;
    } else if (fence !== null) {
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence[1]); i++) {
        body.push(lines[i]);
      }
      i++; // the closing fence, when there is one
      out.push({ tag: 'pre', children: [{ tag: 'code', children: [body.join('\n')] }] });
    } else if (heading !== null) {
      out.push({ tag: `h${heading[1].length}` as MarkdownTag, children: inline(heading[2] ?? '') });
      i++;
    } else if (RULE.test(line)) {
      out.push({ tag: 'hr', children: [] });
      i++;
    } else if (QUOTE.test(line)) {
      const inner: string[] = [];
      for (let m = QUOTE.exec(lines[i]); m !== null; m = i < lines.length ? QUOTE.exec(lines[i]) : null) {
        inner.push(m[1]);
        i++;
      }
      out.push({ tag: 'blockquote', children: blocks(inner) });
    } else if (ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: MarkdownNode[] = [];
      for (let m = ITEM.exec(lines[i]); m !== null && /^\s*\d/.test(lines[i]) === ordered; ) {
        const text = [m[2]];
        // Its indented lines belong to it; a blank line between items keeps the list going.
        for (i++; i < lines.length && /^\s+\S/.test(lines[i]) && !ITEM.test(lines[i]); i++) {
          text.push(lines[i].trim());
        }
        items.push({ tag: 'li', children: inline(text.join('\n')) });
        let next = i;
        while (next < lines.length && lines[next].trim() === '') {
          next++;
        }
        m = next < lines.length ? ITEM.exec(lines[next]) : null;
        if (m !== null) {
          i = next;
        }
      }
      out.push({ tag: ordered ? 'ol' : 'ul', children: items });
    } else {
      const text = [line.trim()];
      for (i++; i < lines.length && lines[i].trim() !== '' && !startsBlock(lines[i]); i++) {
        text.push(lines[i].trim());
      }
      out.push({ tag: 'p', children: inline(text.join('\n')) });
    }
  }
  return out;
}

const EMPHASIS: Array<[string, MarkdownTag]> = [
  ['**', 'strong'],
  ['__', 'strong'],
  ['~~', 'del'],
  ['*', 'em'],
  ['_', 'em']
];

/** Where the delimiter `d` that opened at `from` closes: not escaped, not after a space, -1 if nowhere. */
function closing(text: string, from: number, d: string): number {
  for (let j = text.indexOf(d, from); j !== -1; j = text.indexOf(d, j + 1)) {
    const single = d.length === 1 && (text[j + 1] === d || text[j - 1] === d);
    const wordy = d[0] === '_' && /\w/.test(text[j + d.length] ?? ''); // no emphasis inside a word
    if (j > from && text[j - 1] !== '\\' && !/\s/.test(text[j - 1]) && !single && !wordy) {
      return j;
    }
  }
  return -1;
}

function inline(text: string): MarkdownNode[] {
  const out: MarkdownNode[] = [];
  let plain = '';
  const push = (node: MarkdownNode): void => {
    if (plain !== '') {
      out.push(plain);
      plain = '';
    }
    out.push(node);
  };
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const c = text[i];
    if (c === '\\' && /^[!-/:-@[-`{-~]/.test(text[i + 1] ?? '')) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '`') {
      const ticks = '`'.repeat(rest.length - rest.replace(/^`+/, '').length);
      const end = text.indexOf(ticks, i + ticks.length);
      if (end !== -1) {
        push({ tag: 'code', children: [text.slice(i + ticks.length, end).replace(/\n/g, ' ')] });
        i = end + ticks.length;
      } else {
        plain += ticks;
        i += ticks.length;
      }
      continue;
    }
    const link = c === '[' || (c === '!' && text[i + 1] === '[') ? LINK.exec(rest) : null;
    if (link !== null) {
      const [whole, image, label, rawAddress] = link;
      const address = rawAddress.replace(/^<|>$/g, '');
      const shown: MarkdownNode[] = image ? [`image: ${label || address}`] : inline(label);
      if (LINK_ADDRESS.test(address)) {
        push({ tag: 'a', href: address, children: shown });
      } else {
        shown.forEach(push);
      }
      i += whole.length;
      continue;
    }
    const autolink = c === '<' ? AUTOLINK.exec(rest) : null;
    if (autolink !== null) {
      push(LINK_ADDRESS.test(autolink[1]) ? { tag: 'a', href: autolink[1], children: [autolink[1]] } : autolink[0]);
      i += autolink[0].length;
      continue;
    }
    const emphasis = EMPHASIS.find(([d]) => rest.startsWith(d));
    if (emphasis !== undefined && !/\s/.test(text[i + emphasis[0].length] ?? ' ')) {
      const [d, tag] = emphasis;
      const end = d[0] === '_' && /\w/.test(text[i - 1] ?? '') ? -1 : closing(text, i + d.length, d);
      if (end !== -1) {
        push({ tag, children: inline(text.slice(i + d.length, end)) });
        i = end + d.length;
        continue;
      }
      plain += d;
      i += d.length;
      continue;
    }
    plain += c;
    i++;
  }
  if (plain !== '') {
    out.push(plain);
  }
  return out;
}
