// choice: pick one of 2-255 labels. Options are shown with letters (A, B, ..., then two-letter
// labels) and the letter is read.
import type { ChoiceAnswer } from '../schema/answers.js';
import type { Entry } from '../schema/entry.js';
import { valueError, type ValidationErrorItem } from '../schema/problems.js';
import { questionBody } from '../prompt.js';
import { argmax, keyed } from '../readout.js';
import { countError, criteriaCount, described, renderEntry, splitListing } from './criteria.js';
import { onlyProbe, type QuestionKind } from './kind.js';

export const CHOICE_LABELS = { kind: 'choice', what: 'labels', min: 2, max: 255 } as const;

export interface ChoiceSpec {
  kind: 'choice';
  name: string;
  instructions: string | null;
  options: { label: string; description: string | null }[];
}

function options(criteria: unknown): ChoiceSpec['options'] {
  if (criteria === null || criteria === undefined) return [];
  if (typeof criteria === 'string') return splitListing(criteria).map((label) => ({ label, description: null }));
  if (Array.isArray(criteria)) return criteria.map((label) => ({ label: String(label), description: null }));
  return Object.entries(criteria as Record<string, Entry>).map(([label, d]) => ({ label, description: renderEntry(d) }));
}

/** The reference confidence: how far the top probability stands above uniform, 0 to 1. */
export function choiceConfidence(p: number[]): number {
  const n = p.length;
  return Math.min(1, Math.max(0, (Math.max(...p) - 1 / n) / (1 - 1 / n)));
}

/** One problem for empty labels and one per label that repeats, however often each occurs. */
function labelErrors(labels: string[], loc: (string | number)[], criteria: unknown): ValidationErrorItem[] {
  const errors: ValidationErrorItem[] = [];
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let empty = false;
  for (const label of labels) {
    if (label.trim() === '') {
      if (!empty) errors.push(valueError(loc, 'choice labels must not be empty', criteria));
      empty = true;
    } else if (seen.has(label) && !repeated.has(label)) {
      errors.push(valueError(loc, `choice labels must be distinct; "${label}" appears more than once`, criteria));
      repeated.add(label);
    }
    seen.add(label);
  }
  return errors;
}

export const choice: QuestionKind<ChoiceSpec, ChoiceAnswer> = {
  normalise(name, q) {
    const loc = ['body', 'questions', name, 'criteria'];
    const count = countError(CHOICE_LABELS, criteriaCount(q.criteria), loc, q.criteria ?? null);
    if (count) return { errors: [count] };
    const opts = options(q.criteria);
    const labels = opts.map((o) => o.label);
    const errors = labelErrors(labels, loc, q.criteria);
    if (errors.length > 0) return { errors };
    return { spec: { kind: 'choice', name, instructions: renderEntry(q.instructions as Entry | undefined), options: opts }, errors };
  },

  options: (spec) => spec.options.length,

  capacity: ({ labels }) => labels.optionLabels.length,

  probes: (spec, { labels }) => [
    {
      answers: spec.options.length,
      render(ordering) {
        const shown = labels.optionLabels.slice(0, ordering.length);
        const lines = [
          'Options:',
          ...ordering.map((option, position) => `${shown[position]!.label}. ${described(spec.options[option]!.label, spec.options[option]!.description)}`),
        ];
        return { text: questionBody(spec.instructions, lines, 'Reply with only the letter of the best option.'), answers: shown.map((l) => l.tokens) };
      },
    },
  ],

  combine: onlyProbe,

  answer(spec, r) {
    const names = spec.options.map((o) => o.label);
    return {
      type: 'choice',
      choice: names[argmax(r.p)]!,
      probabilities: keyed(names, r.p),
      confidence: choiceConfidence(r.p),
      confidence_band: r.band,
      raw_probabilities: r.raw ? keyed(names, r.raw) : null,
      debias_passes: r.debiasPasses,
      label_mass: r.labelMass,
    };
  },
};
