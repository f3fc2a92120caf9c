// What every question kind provides. A kind owns its whole path: how its criteria normalise, what
// it asks the model (its probes, each shown in one ordering of its answers per pass), how the
// probes' distributions become one over its options, and how that becomes its typed answer.
// decide.ts knows kinds only through this interface.
import type { Answer, ConfidenceBand } from '../schema/answers.js';
import type { ValidationErrorItem } from '../schema/problems.js';
import type { EngineInfo } from '../../engine/types.js';
import type { Permutation } from '../debias.js';
import type { Ordering } from '../permutations.js';
import type { PromptLayout } from '../prompt.js';

/** The answer labels a model offers, as the engine found them at load. */
export type Labels = Pick<EngineInfo, 'optionLabels' | 'digitLabels' | 'yes' | 'no'>;

export interface RenderContext {
  labels: Labels;
  layout: PromptLayout;
}

export interface RenderedBranch {
  /** Body text after the shared state: the question, its options in this ordering, the reply line. */
  text: string;
  /** Per position, the token ids of the answer shown there. */
  answers: number[][];
}

/** The distribution read for one question, ready to be worded as its answer. */
export interface Reading {
  /** Per option (original order), after debiasing and, when on, calibration. */
  p: number[];
  /** The unpermuted pass, uncalibrated; null unless the client asked for raw probabilities. */
  raw: number[] | null;
  debiasPasses: number | null;
  band: ConfidenceBand;
  /** Share of the next-token distribution on this question's answer labels (mean over passes). */
  labelMass: number;
}

export interface Normalises<S> {
  /** Criteria of a question that passed its variant's schema → its spec, or every problem with them. */
  normalise(name: string, question: Record<string, unknown>): { spec?: S; errors: ValidationErrorItem[] };
}

/**
 * A kind the API accepts but no engine here can answer: its questions are validated like any
 * other, then refused with a 422 that names them and says why.
 */
export interface PreviewKind<S> extends Normalises<S> {
  refusal(spec: S): string;
}

/**
 * One thing a question asks the model, read back as a distribution over its own answers. permute
 * pools it over orderings of those answers.
 */
export interface Probe {
  /** How many answers it offers. */
  answers: number;
  /** The branch showing its answers in one ordering (ordering[position] = answer). */
  render(ordering: Ordering): RenderedBranch;
  /** How permute orders its answers and pools the passes; rotations averaged when absent. */
  permutation?: Permutation;
}

export interface QuestionKind<S, A extends Answer = Answer> extends Normalises<S> {
  /** How many answer options the question has. */
  options(spec: S): number;
  /** The most options this kind can show with this model's labels. */
  capacity(ctx: RenderContext): number;
  /** What is asked of the model; most kinds ask one probe whose answers are the options. */
  probes(spec: S, ctx: RenderContext): Probe[];
  /** The probes' distributions (debiased, in probes() order) → one over the question's options. */
  combine(spec: S, probes: number[][], ctx: RenderContext): number[];
  answer(spec: S, reading: Reading): A;
}

/** The distribution of a kind's only probe, whose answers are its options. */
export function onlyProbe(_spec: unknown, probes: number[][]): number[] {
  return probes[0]!;
}
