// Text tokenised the Penn Treebank way (SST's leaves, TREC's questions) turned back into prose.
const ESCAPES: Record<string, string> = { '-LRB-': '(', '-RRB-': ')', '-LSB-': '[', '-RSB-': ']', '-LCB-': '{', '-RCB-': '}', '``': '"', "''": '"', '`': "'" };
/** Tokens written against the word before them. */
const CLOSING = /^(?:[,.;:!?%)\]}]|\.\.\.|n't|'s|'re|'ve|'ll|'d|'m)$/i;
const OPENING = /^[([{]$/;

/**
 * The text the tokens spell, undoing only what cannot be misread: the escapes (brackets, `\/` for a
 * slash, `` and '' for ", ` for '), and the space before a closing token (punctuation, a clitic such
 * as 's or n't) and after an opening bracket. Quotes keep their spaces: whether one opens or closes
 * is a guess. Whole tokens only: `.com` keeps its space.
 */
export function detokenise(tokens: string[]): string {
  const words = tokens.map((t) => ESCAPES[t] ?? t.replace(/\\([/*])/g, '$1'));
  return words.reduce((text, w, i) => (i === 0 || CLOSING.test(w) || OPENING.test(words[i - 1]!) ? `${text}${w}` : `${text} ${w}`), '');
}
