// The typed answers a decision returns, one variant per kind.
import { Type, type Static } from '@sinclair/typebox';
import { JsonObject, MemberName } from './entry.js';

export const ConfidenceBand = Type.Union([Type.Literal('high'), Type.Literal('leaning'), Type.Literal('low'), Type.Null()], {
  description: 'Calibration band of the answer; null unless the server applies a calibration (--calibration fitted or preset).',
});
export type ConfidenceBand = Static<typeof ConfidenceBand>;

const DebiasPasses = Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: 'orderings averaged; null when debias is off' }));
const LabelMass = Type.Optional(
  Type.Number({
    minimum: 0,
    maximum: 1,
    description:
      "Arbitra extension: the share of the model's next-token distribution that fell on this question's answer labels (mean over passes). Low values mean the model was not going to answer with a label at all.",
  }),
);
const RawProbabilities = Type.Optional(
  Type.Union([Type.Record(MemberName, Type.Number()), Type.Null()], {
    description: 'the single unpermuted pass; null unless options.return_raw_probabilities',
  }),
);

export const NoulAnswer = Type.Object({
  type: Type.Literal('noul', { default: 'noul' }),
  noul: Type.Number({ description: 'P(yes); uncalibrated unless the server applies a fitted calibration (meta.calibration_version)' }),
  confidence_band: Type.Optional(ConfidenceBand),
  raw_noul: Type.Optional(Type.Union([Type.Number(), Type.Null()], { description: 'P(yes) of the single unpermuted pass; null unless requested' })),
  debias_passes: DebiasPasses,
  label_mass: LabelMass,
});
export type NoulAnswer = Static<typeof NoulAnswer>;

export const ChoiceAnswer = Type.Object({
  type: Type.Literal('choice', { default: 'choice' }),
  choice: Type.String({ description: 'the most probable label' }),
  probabilities: Type.Record(MemberName, Type.Number(), {
    description: 'label → probability, summing to 1; uncalibrated unless meta.calibration_version is set',
  }),
  confidence: Type.Number({ description: '(max p − 1/N) / (1 − 1/N): 1 when certain, 0 when uniform' }),
  confidence_band: Type.Optional(ConfidenceBand),
  raw_probabilities: RawProbabilities,
  debias_passes: DebiasPasses,
  label_mass: LabelMass,
});
export type ChoiceAnswer = Static<typeof ChoiceAnswer>;

export const ScoreAnswer = Type.Object({
  type: Type.Literal('score', { default: 'score' }),
  score: Type.Number({ description: 'the expected level, Σ i·pᵢ over probabilities (calibrated where calibration is on), from 0 to levels − 1' }),
  legend: Type.Record(MemberName, Type.Union([Type.String(), JsonObject, Type.Array(Type.Unknown())]), {
    description: 'level index → the level description exactly as sent (text, object or array); "" for a level sent as null',
  }),
  probabilities: Type.Record(MemberName, Type.Number(), { description: 'level index → probability, summing to 1' }),
  confidence: Type.Number({ description: 'max(0, 1 − Σ pᵢ·|i − mode| / U(N)), U(N) = Σᵢ |i − (N−1)/2| / N: 1 when certain' }),
  confidence_band: Type.Optional(ConfidenceBand),
  raw_probabilities: RawProbabilities,
  debias_passes: DebiasPasses,
  label_mass: LabelMass,
});
export type ScoreAnswer = Static<typeof ScoreAnswer>;

const Edge = (what: string) => Type.Number({ minimum: 0, maximum: 1, description: what });

/** Image and box answers are a preview; a text-only model refuses box questions with 422. */
export const BoxAnswer = Type.Object(
  {
    type: Type.Literal('box', { default: 'box' }),
    box: Type.Object({
      top: Edge('top edge, as a fraction of the image height from the top'),
      bottom: Edge('bottom edge, as a fraction of the image height from the top'),
      left: Edge('left edge, as a fraction of the image width from the left'),
      right: Edge('right edge, as a fraction of the image width from the left'),
    }),
    confidence: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
  },
  { description: "Preview: where the box question's subject is in the image." },
);
export type BoxAnswer = Static<typeof BoxAnswer>;

export const Answer = Type.Union([NoulAnswer, ChoiceAnswer, ScoreAnswer, BoxAnswer]);
export type Answer = Static<typeof Answer>;
