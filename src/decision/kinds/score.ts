// score: rate on 2-10 ordered levels, level i being score i. Levels are shown like a choice's
// options, lettered, with their descriptions (or their numbers where they have none); a layout may
// show them with their own digits instead. Measured on the labelled set (bench/RESULTS.md), the
// default model rates far better picking a lettered description than a digit, and its level
// distributions are flat enough that the expected level regresses to the middle: the score is the
// most probable level, and the probabilities carry the uncertainty.
import type { ScoreAnswer } from '../../api/schemas/systemone.js';
import type { Entry } from '../../api/schemas/common.js';
import { questionBody } from '../prompt.js';
import { argmax, keyed } from '../readout.js';
import { countError, renderEntry, splitListing } from './criteria.js';
import type { QuestionKind, RenderContext } from './kind.js';

export const SCORE_LEVELS = { kind: 'score', what: 'levels', min: 2, max: 10 } as const;

/** What the legend shows for a level: its description as the client sent it. */
export type LegendValue = ScoreAnswer['legend'][string];

export interface ScoreSpec {
  kind: 'score';
  name: string;
  instructions: string | null;
  /** Level i is score i, as the model is shown it; "" when the client gave no description. */
  levels: string[];
  /** Level i as the client sent it: objects and arrays unchanged, text as shown. */
  legend: LegendValue[];
}

/** Objects and arrays go back to the client as they came; text is the description as shown. */
function asSent(sent: Entry | undefined, shown: string): LegendValue {
  return sent !== null && typeof sent === 'object' ? sent : shown;
}

function levels(criteria: unknown): { shown: string; sent: LegendValue }[] {
  if (criteria === null || criteria === undefined) return [];
  if (typeof criteria === 'string') return splitListing(criteria).map((text) => ({ shown: text, sent: text }));
  if (Array.isArray(criteria)) {
    return criteria.map((d: Entry) => {
      const shown = renderEntry(d) ?? '';
      return { shown, sent: asSent(d, shown) };
    });
  }
  // Keys that merely restate the index ("0", "1", ...) carry nothing; other keys name the level.
  return Object.entries(criteria as Record<string, Entry>).map(([key, d], i) => {
    const text = renderEntry(d);
    const shown = key === String(i) ? (text ?? '') : text === null || text === '' ? key : `${key}: ${text}`;
    return { shown, sent: asSent(d, shown) };
  });
}

/**
 * The reference confidence: 1 minus the expected distance from the most probable level, relative
 * to that of a uniform distribution around the middle, U(N) = Σ|i − (N−1)/2| / N; floored at 0.
 */
export function scoreConfidence(p: number[]): number {
  const n = p.length;
  const mode = argmax(p);
  const spread = p.reduce((acc, x, i) => acc + x * Math.abs(i - mode), 0);
  const uniform = p.reduce((acc, _, i) => acc + Math.abs(i - (n - 1) / 2), 0) / n;
  return Math.min(1, Math.max(0, 1 - spread / uniform));
}

function useDigits(ctx: RenderContext, n: number): boolean {
  return ctx.layout.scoreLabels === 'digits' && ctx.labels.digitLabels.length >= n;
}

export const score: QuestionKind<ScoreSpec, ScoreAnswer> = {
  normalise(name, q) {
    const found = levels(q.criteria);
    const bad = countError(SCORE_LEVELS, found.length, ['body', 'questions', name, 'criteria'], q.criteria ?? null);
    if (bad) return { errors: [bad] };
    const spec: ScoreSpec = {
      kind: 'score',
      name,
      instructions: renderEntry(q.instructions as Entry | undefined),
      levels: found.map((l) => l.shown),
      legend: found.map((l) => l.sent),
    };
    return { spec, errors: [] };
  },

  options: (spec) => spec.levels.length,

  capacity: (ctx) => (useDigits(ctx, SCORE_LEVELS.max) ? ctx.labels.digitLabels.length : ctx.labels.optionLabels.length),

  render(spec, ordering, ctx) {
    const n = spec.levels.length;
    if (useDigits(ctx, n)) {
      // The digit is the level itself, so a permuted ordering moves lines, never renumbers them.
      const lines = [`Levels (0 = lowest, ${n - 1} = highest):`, ...ordering.map((level) => (spec.levels[level] ? `${level} = ${spec.levels[level]}` : String(level)))];
      return {
        text: questionBody(spec.instructions, lines, 'Reply with only the number of the best matching level.'),
        answers: ordering.map((level) => ctx.labels.digitLabels[level]!.tokens),
      };
    }
    const shown = ctx.labels.optionLabels.slice(0, n);
    const lines = ['Options:', ...ordering.map((level, position) => `${shown[position]!.label}. ${spec.levels[level] || String(level)}`)];
    return { text: questionBody(spec.instructions, lines, 'Reply with only the letter of the best option.'), answers: shown.map((l) => l.tokens) };
  },

  answer(spec, r) {
    const keys = spec.levels.map((_, i) => String(i));
    return {
      type: 'score',
      score: argmax(r.p),
      legend: Object.fromEntries(spec.legend.map((d, i) => [String(i), d])),
      probabilities: keyed(keys, r.p),
      confidence: scoreConfidence(r.p),
      confidence_band: r.band,
      raw_probabilities: r.raw ? keyed(keys, r.raw) : null,
      debias_passes: r.debiasPasses,
      label_mass: r.labelMass,
    };
  },
};
