// score: rate on 2-10 ordered levels, level i being score i. Levels are shown like a choice's
// options, lettered, with their descriptions (or their numbers where they have none); a layout may
// show them with their own digits, or ask one yes/no threshold per level instead, and raises the
// read distribution to its temperature (1, as read, in the served layout: src/decision/prompt.ts
// says why). The score is the expectation Σ i·pᵢ of the served probabilities, as in the
// reference API: clients threshold and average it.
import type { ScoreAnswer } from '../schema/answers.js';
import type { Entry } from '../schema/entry.js';
import { MIRRORED } from '../debias.js';
import { questionBody } from '../prompt.js';
import { argmax, keyed, tempered } from '../readout.js';
import { countError, criteriaCount, renderEntry, splitListing } from './criteria.js';
import type { Probe, QuestionKind, RenderContext } from './kind.js';
import { yesNoProbe } from './noul.js';

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

/** The reference score: the expected level under the served distribution. */
export function expectation(p: number[]): number {
  return p.reduce((acc, x, i) => acc + x * i, 0);
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
  return ctx.layout.scoreReadout === 'digits' && ctx.labels.digitLabels.length >= n;
}

/** Level i as the model is shown it: its description, or its number where it has none. */
const shownLevel = (spec: ScoreSpec, level: number): string => spec.levels[level] || String(level);

/** The levels shown once as a choice: lettered descriptions, or each level's own digit. */
function pickLevel(spec: ScoreSpec, ctx: RenderContext): Probe {
  const n = spec.levels.length;
  if (useDigits(ctx, n)) {
    return {
      answers: n,
      permutation: MIRRORED,
      render(ordering) {
        // The digit is the level itself, so a permuted ordering moves lines, never renumbers them.
        const lines = [
          `Levels (0 = lowest, ${n - 1} = highest):`,
          ...ordering.map((level) => (spec.levels[level] ? `${level} = ${spec.levels[level]}` : String(level))),
        ];
        return {
          text: questionBody(spec.instructions, lines, 'Reply with only the number of the best matching level.'),
          answers: ordering.map((level) => ctx.labels.digitLabels[level]!.tokens),
        };
      },
    };
  }
  return {
    answers: n,
    permutation: MIRRORED,
    render(ordering) {
      const shown = ctx.labels.optionLabels.slice(0, n);
      const lines = ['Options:', ...ordering.map((level, position) => `${shown[position]!.label}. ${shownLevel(spec, level)}`)];
      return { text: questionBody(spec.instructions, lines, 'Reply with only the letter of the best option.'), answers: shown.map((l) => l.tokens) };
    },
  };
}

/**
 * The ordinal readout: one yes/no probe per threshold k = 1..n−1, "is it level k or higher?",
 * each after the same question and scale so that their shared head is decoded once.
 */
function thresholds(spec: ScoreSpec, ctx: RenderContext): Probe[] {
  const scale = ['Scale, lowest to highest:', ...spec.levels.map((_, i) => `- ${shownLevel(spec, i)}`)];
  return spec.levels
    .slice(1)
    .map((_, i) =>
      yesNoProbe(ctx.labels, spec.instructions, { yes: null, no: null }, [...scale, `Is the answer "${shownLevel(spec, i + 1)}" or higher on this scale?`]),
    );
}

/**
 * P(level ≥ k) for k = 1..n−1, read one threshold at a time, made non-increasing (pool adjacent
 * violators, equal weights), then differenced into P(level = i).
 */
export function fromThresholds(atLeast: number[]): number[] {
  const blocks: { sum: number; count: number }[] = [];
  for (const q of atLeast) {
    blocks.push({ sum: q, count: 1 });
    while (blocks.length > 1 && blocks.at(-2)!.sum / blocks.at(-2)!.count < blocks.at(-1)!.sum / blocks.at(-1)!.count) {
      const last = blocks.pop()!;
      blocks.at(-1)!.sum += last.sum;
      blocks.at(-1)!.count += last.count;
    }
  }
  const monotone = blocks.flatMap((b) => Array<number>(b.count).fill(b.sum / b.count));
  const cumulative = [1, ...monotone, 0];
  return cumulative.slice(0, -1).map((q, i) => Math.max(0, q - cumulative[i + 1]!));
}

export const score: QuestionKind<ScoreSpec, ScoreAnswer> = {
  normalise(name, q) {
    const bad = countError(SCORE_LEVELS, criteriaCount(q.criteria), ['body', 'questions', name, 'criteria'], q.criteria ?? null);
    if (bad) return { errors: [bad] };
    const found = levels(q.criteria);
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

  capacity: (ctx) =>
    ctx.layout.scoreReadout === 'ordinal'
      ? SCORE_LEVELS.max
      : useDigits(ctx, SCORE_LEVELS.max)
        ? ctx.labels.digitLabels.length
        : ctx.labels.optionLabels.length,

  probes: (spec, ctx) => (ctx.layout.scoreReadout === 'ordinal' ? thresholds(spec, ctx) : [pickLevel(spec, ctx)]),

  combine(_spec, probes, ctx) {
    const p = ctx.layout.scoreReadout === 'ordinal' ? fromThresholds(probes.map((yesNo) => yesNo[0]!)) : probes[0]!;
    return tempered(p, ctx.layout.scoreTemperature);
  },

  answer(spec, r) {
    const keys = spec.levels.map((_, i) => String(i));
    return {
      type: 'score',
      score: expectation(r.p),
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
