// Answer labels must each be exactly one token, written the way the model would start its reply
// (no leading space: the reply begins right after the template's newline).
import type { AnswerLabel } from './types.js';

export const MAX_OPTION_LABELS = 255;

type Tokenize = (text: string) => Int32Array;

function single(tokenize: Tokenize, label: string): AnswerLabel | null {
  const ids = tokenize(label);
  return ids.length === 1 ? { label, token: ids[0]! } : null;
}

function* candidateLabels(): Generator<string> {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (const a of letters) yield a;
  for (const a of letters) for (const b of letters) yield a + b;
}

/** A, B, ..., Z, then two-letter labels that the vocabulary holds as single tokens, up to 255. */
export function findOptionLabels(tokenize: Tokenize): AnswerLabel[] {
  const out: AnswerLabel[] = [];
  const seen = new Set<number>();
  for (const label of candidateLabels()) {
    const found = single(tokenize, label);
    if (found && !seen.has(found.token)) {
      seen.add(found.token);
      out.push(found);
      if (out.length === MAX_OPTION_LABELS) break;
    }
  }
  return out;
}

/** The yes/no answer tokens; the first spelling that is a single token wins. */
export function findYesNo(tokenize: Tokenize): { yes: AnswerLabel; no: AnswerLabel } {
  const pick = (spellings: string[]): AnswerLabel => {
    for (const s of spellings) {
      const found = single(tokenize, s);
      if (found) return found;
    }
    throw new Error(`the model's vocabulary has no single token for any of ${spellings.join(', ')}`);
  };
  return { yes: pick(['Yes', 'yes', 'YES', 'Y']), no: pick(['No', 'no', 'NO', 'N']) };
}
