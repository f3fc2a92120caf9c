// POST /v1/systemone: the request, its question variants and options, and the response.
// Unknown members are allowed everywhere (TypeBox's default), so newer clients keep working.
import { Type, type Static } from '@sinclair/typebox';
import { ConfidenceBand, Entry, JsonObject, MemberName } from './common.js';

const Instructions = Type.Optional(Entry);

export const NoulCriteria = Type.Object(
  {
    true: Type.Optional(Entry),
    false: Type.Optional(Entry),
  },
  { description: 'What a yes ("true") and a no ("false") mean.' },
);

/**
 * A yes/no question. `yes_no` is accepted as an alias and answered as `noul`; a question that has
 * no `type` at all is a noul question (the only variant that can be recognised without one).
 */
export const NoulQuestion = Type.Object({
  type: Type.Optional(Type.Union([Type.Literal('noul'), Type.Literal('yes_no')], { default: 'noul' })),
  instructions: Instructions,
  criteria: Type.Optional(Type.Union([NoulCriteria, Type.Null()])),
});

export const ChoiceCriteria = Type.Union(
  [
    Type.Record(MemberName, Entry, { description: 'label → description (null for none), in order' }),
    Type.Array(Type.String(), { description: 'labels without descriptions' }),
    Type.String({ description: 'labels separated by newlines, or by commas when on one line' }),
    Type.Null(),
  ],
  { description: '2 to 255 distinct, non-empty labels.' },
);

export const ChoiceQuestion = Type.Object({
  type: Type.Literal('choice'),
  instructions: Instructions,
  criteria: Type.Optional(ChoiceCriteria),
});

export const ScoreCriteria = Type.Union(
  [
    Type.Array(Entry, { description: 'level descriptions, lowest first; level i is score i' }),
    Type.Record(MemberName, Entry, { description: 'levels in key order' }),
    Type.String({ description: 'one level per line, lowest first' }),
    Type.Null(),
  ],
  { description: '2 to 10 levels, indexed from 0.' },
);

export const ScoreQuestion = Type.Object({
  type: Type.Literal('score'),
  instructions: Instructions,
  criteria: Type.Optional(ScoreCriteria),
});

export const BoxQuestion = Type.Object(
  {
    type: Type.Literal('box'),
    instructions: Instructions,
  },
  { description: 'Preview: locate what the instructions describe in the image of the state. Needs a model that reads images; a text-only model answers 422.' },
);

export const Question = Type.Union([NoulQuestion, ChoiceQuestion, ScoreQuestion, BoxQuestion], {
  description: 'Discriminated by `type`: noul (also yes_no, and the default when type is absent), choice, score, box (preview).',
});

/** The values `type` may take, and the variant each selects. */
export const QUESTION_VARIANTS = {
  noul: NoulQuestion,
  yes_no: NoulQuestion,
  choice: ChoiceQuestion,
  score: ScoreQuestion,
  box: BoxQuestion,
} as const;
export type QuestionTypeName = keyof typeof QUESTION_VARIANTS;

export const OPTION_DEFAULTS = {
  debias: 'off',
  debias_passes: 4,
  return_raw_probabilities: false,
  retain: false,
} as const;

export const SystemOneOptions = Type.Object({
  debias: Type.Optional(
    Type.Union([Type.Literal('off'), Type.Literal('permute')], {
      default: OPTION_DEFAULTS.debias,
      description: 'permute averages balanced reorderings of the options to cancel position bias.',
    }),
  ),
  debias_passes: Type.Optional(
    Type.Integer({ minimum: 2, maximum: 8, default: OPTION_DEFAULTS.debias_passes, description: 'orderings averaged when debias is permute' }),
  ),
  return_raw_probabilities: Type.Optional(
    Type.Boolean({ default: OPTION_DEFAULTS.return_raw_probabilities, description: 'add the single unpermuted pass as raw_probabilities / raw_noul' }),
  ),
  retain: Type.Optional(
    Type.Boolean({ default: OPTION_DEFAULTS.retain, description: 'keep the request and response for 30 days (see retention)' }),
  ),
});
export type SystemOneOptions = Static<typeof SystemOneOptions>;

export const IMAGE_FORMATS = ['png', 'jpg', 'jpeg'] as const;

export const Asset = Type.Object(
  {
    type: Type.Optional(Type.Literal('image', { default: 'image', description: 'the only asset type' })),
    format: Type.Optional(
      Type.Union(
        IMAGE_FORMATS.map((f) => Type.Literal(f)),
        { description: 'required with data_base64; the bytes must really be a PNG or a JPEG' },
      ),
    ),
    data_base64: Type.Optional(Type.String({ description: 'the image file, base64-encoded (a data:image/...;base64, prefix is accepted)' })),
    part: Type.Optional(Type.String({ description: 'in a multipart/form-data request, the name of the part holding the image; data_base64 is then ignored' })),
  },
  { description: 'An image referenced from the state, instructions or criteria by its key.' },
);
export type Asset = Static<typeof Asset>;

// Shared by the full request schema and the envelope that is checked before the questions are.
const requestMembers = {
  model: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'model id or alias; absent → the default model' })),
  state: Type.Union([Type.String(), JsonObject, Type.Array(Type.Unknown())], {
    description: 'Context for the questions; objects and arrays are shown to the model as compact JSON.',
  }),
  options: Type.Optional(Type.Union([SystemOneOptions, Type.Null()])),
  assets: Type.Optional(
    Type.Union(
      [
        Type.Record(MemberName, Asset, {
          minProperties: 1,
          description:
            'Preview, with the images danger-zone header: images keyed by a placeholder that appears in the state, instructions or criteria (e.g. <image:…>). Every placeholder needs its asset and every asset must be referenced. A text-only model answers 422 naming the asset; an image is never silently ignored.',
        }),
        Type.Null(),
      ],
    ),
  ),
};

export const SystemOneRequest = Type.Object({
  ...requestMembers,
  questions: Type.Record(MemberName, Question, { minProperties: 1, description: 'question name → question; at least one. Names are never shown to the model.' }),
});
export type SystemOneRequest = Static<typeof SystemOneRequest>;

/** The request with every question still unchecked: each question is validated against its own variant. */
export const SystemOneEnvelope = Type.Object({
  ...requestMembers,
  questions: Type.Record(MemberName, JsonObject, { minProperties: 1 }),
});

// ---- response ----

const DebiasPasses = Type.Optional(
  Type.Union([Type.Integer(), Type.Null()], { description: 'orderings averaged; null when debias is off' }),
);
const LabelMass = Type.Optional(
  Type.Number({
    minimum: 0,
    maximum: 1,
    description:
      'Arbitra extension: the share of the model\'s next-token distribution that fell on this question\'s answer labels (mean over passes). Low values mean the model was not going to answer with a label at all.',
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
  probabilities: Type.Record(MemberName, Type.Number(), { description: 'label → probability, summing to 1; uncalibrated unless meta.calibration_version is set' }),
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
  { description: 'Preview: where the box question\'s subject is in the image.' },
);
export type BoxAnswer = Static<typeof BoxAnswer>;

export const Answer = Type.Union([NoulAnswer, ChoiceAnswer, ScoreAnswer, BoxAnswer]);
export type Answer = Static<typeof Answer>;

export const Usage = Type.Object({
  input_tokens: Type.Integer({ description: 'prompt tokens charged: the shared prefix once plus every question suffix' }),
  output_tokens: Type.Integer({ description: 'one per answer distribution read' }),
  cost_eur: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'six decimals; only when billing meters the call' })),
  cost_currency: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
export type Usage = Static<typeof Usage>;

export const Runtime = Type.Object({
  engine: Type.String(),
  llama_cpp: Type.String(),
  backend: Type.String(),
  threads: Type.Integer(),
});

export const ResponseMeta = Type.Object({
  model: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  quant_method: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  quant_bits: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  runtime: Type.Optional(Type.Union([Runtime, Type.Null()])),
  calibration_version: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  calibration: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  region: Type.Optional(Type.String({ default: 'eu' })),
  api_region: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  latency_ms: Type.Optional(Type.Integer({ default: 0 })),
  gpu_memory_mb: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  transparency_notice: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  api_version: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
export type ResponseMeta = Static<typeof ResponseMeta>;

export const RETENTION_DAYS = 30;

export const RetentionInfo = Type.Object({
  retained: Type.Optional(Type.Boolean({ default: true })),
  retention_days: Type.Optional(Type.Integer({ default: RETENTION_DAYS })),
  retention_until: Type.String({ format: 'date-time' }),
  pseudonym_id: Type.String(),
  region: Type.Optional(Type.String({ default: 'eu' })),
});
export type RetentionInfo = Static<typeof RetentionInfo>;

export const SystemOneResponse = Type.Object({
  id: Type.String({ description: 'identifies the request; also sent as x-typesafe-request-id' }),
  model: Type.String(),
  answers: Type.Record(MemberName, Answer),
  usage: Usage,
  meta: Type.Optional(Type.Union([ResponseMeta, Type.Null()])),
  retention: Type.Optional(Type.Union([RetentionInfo, Type.Null()])),
});
export type SystemOneResponse = Static<typeof SystemOneResponse>;
