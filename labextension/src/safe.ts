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
