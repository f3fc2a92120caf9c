// The decision request the playground sends and the snippets reproduce, built from the form's draft.
import type { DecisionOptions } from './wire.js';

export type { DecisionOptions };

export type QuestionType = 'noul' | 'choice' | 'score';

export interface QuestionDraft {
  name: string;
  type: QuestionType;
  instructions: string;
  /** Choice labels or score levels (lowest first), one per entry; unused for noul. */
  criteria: string[];
}

export type QuestionBody = { type: 'noul'; instructions: string } | { type: 'choice' | 'score'; instructions: string; criteria: string[] };

export interface DecisionRequest {
  state: string;
  questions: Record<string, QuestionBody>;
  options: DecisionOptions;
}

export function questionBody(draft: QuestionDraft): QuestionBody {
  return draft.type === 'noul'
    ? { type: 'noul', instructions: draft.instructions }
    : { type: draft.type, instructions: draft.instructions, criteria: draft.criteria };
}

export function buildRequest(state: string, drafts: QuestionDraft[], options: DecisionOptions): DecisionRequest {
  // fromEntries defines own properties, so even a question named "__proto__" stays a question.
  return { state, questions: Object.fromEntries(drafts.map((d) => [d.name, questionBody(d)])), options };
}

/** What is wrong with the drafts before the server is asked, or null. */
export function draftProblem(drafts: QuestionDraft[]): string | null {
  if (drafts.length === 0) return 'Add at least one question.';
  const seen = new Set<string>();
  for (const [i, d] of drafts.entries()) {
    if (d.name === '') return `Question ${i + 1} needs a name.`;
    if (seen.has(d.name)) return `Two questions are named \u201c${d.name}\u201d; each name must be different.`;
    seen.add(d.name);
  }
  return null;
}
