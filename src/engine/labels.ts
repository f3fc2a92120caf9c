// Answer labels must each be one token, written the way the model would start its reply. A reply
// may start with any of several spellings of the same answer ("A" or " A"; "Yes", "yes" or
// " YES"), so each label carries every spelling the vocabulary holds as one token, and the
// engine sums their probabilities.
import type { AnswerLabel } from './types.js';

export const MAX_OPTION_LABELS = 255;

type Tokenize = (text: string) => Int32Array;

/** The label with the token of each spelling that is a single token; null when the first is not. */
function spelled(tokenize: Tokenize, label: string, spellings: string[]): AnswerLabel | null {
  const tokens: number[] = [];
  for (const s of spellings) {
    const ids = tokenize(s);
    if (ids.length === 1 && !tokens.includes(ids[0]!)) tokens.push(ids[0]!);
    else if (tokens.length === 0) return null;
  }
  return { label, tokens };
}

/** A label as shown, then with a leading space (tokenizers that fold the space into the word). */
function withSpace(label: string): string[] {
  return [label, ` ${label}`];
}

function* candidateLabels(): Generator<string> {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (const a of letters) yield a;
  for (const a of letters) for (const b of letters) yield a + b;
}

/**
 * A, B, ..., Z, then two-letter labels that the vocabulary holds as single tokens, up to 255. A
 * label's other spellings count only where their token is no label's own and not yet claimed, so
 * no token is ever read for two labels.
 */
export function findOptionLabels(tokenize: Tokenize): AnswerLabel[] {
  const out: AnswerLabel[] = [];
  const canonical = new Set<number>();
  for (const candidate of candidateLabels()) {
    const found = spelled(tokenize, candidate, withSpace(candidate));
    if (!found || canonical.has(found.tokens[0]!)) continue;
    canonical.add(found.tokens[0]!);
    out.push(found);
    if (out.length === MAX_OPTION_LABELS) break;
  }
  const claimed = new Set(canonical);
  for (const label of out) {
    label.tokens = label.tokens.filter((t, i) => i === 0 || !claimed.has(t));
    label.tokens.forEach((t) => claimed.add(t));
  }
  return out;
}

/** The digits 0-9 where each is one token (every common tokenizer); [] when any is not. */
export function findDigitLabels(tokenize: Tokenize): AnswerLabel[] {
  const out: AnswerLabel[] = [];
  for (let d = 0; d <= 9; d++) {
    const found = spelled(tokenize, String(d), withSpace(String(d)));
    if (!found) return [];
    out.push(found);
  }
  return out;
}

/**
 * The yes/no answers: the first single-token spelling is the one prompts show, and every other
 * single-token spelling counts too. A single letter (Y/N) is used only when no word spelling is
 * one token, since a reply starting with "Y" is not necessarily a yes.
 */
export function findYesNo(tokenize: Tokenize): { yes: AnswerLabel; no: AnswerLabel } {
  const pick = (words: string[], letter: string): AnswerLabel => {
    for (const group of [words, [letter]]) {
      const spellings = group.flatMap(withSpace);
      const first = spellings.findIndex((s) => tokenize(s).length === 1);
      if (first >= 0) return spelled(tokenize, spellings[first]!.trim(), spellings.slice(first))!;
    }
    throw new Error(`the model's vocabulary has no single token for any of ${[...words, letter].join(', ')}`);
  };
  return { yes: pick(['Yes', 'yes', 'YES'], 'Y'), no: pick(['No', 'no', 'NO'], 'N') };
}
