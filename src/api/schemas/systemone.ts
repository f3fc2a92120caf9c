// POST /v1/systemone on the wire: the request and the response around the decision domain's own
// questions, options and answers, which are re-exported here so the API reads as one schema.
// Unknown members are allowed everywhere (TypeBox's default), so newer clients keep working.
import { Type, type Static } from '@sinclair/typebox';
import { Answer } from '../../decision/schema/answers.js';
import { JsonObject, MemberName, State } from '../../decision/schema/entry.js';
import { DecisionOptions } from '../../decision/schema/options.js';
import { Question } from '../../decision/schema/questions.js';

export * from '../../decision/schema/answers.js';
export * from '../../decision/schema/questions.js';
export { OPTION_DEFAULTS, DecisionOptions as SystemOneOptions } from '../../decision/schema/options.js';

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
  state: State,
  options: Type.Optional(Type.Union([DecisionOptions, Type.Null()])),
  assets: Type.Optional(
    Type.Union([
      Type.Record(MemberName, Asset, {
        minProperties: 1,
        description:
          'Preview, with the images danger-zone header: images keyed by a placeholder that appears in the state, instructions or criteria (e.g. <image:…>). Every placeholder needs its asset and every asset must be referenced. A text-only model answers 422 naming the asset; an image is never silently ignored.',
      }),
      Type.Null(),
    ]),
  ),
};

export const SystemOneRequest = Type.Object({
  ...requestMembers,
  questions: Type.Record(MemberName, Question, {
    minProperties: 1,
    description: 'question name → question; at least one. Names are never shown to the model.',
  }),
});
export type SystemOneRequest = Static<typeof SystemOneRequest>;

/** The request with every question still unchecked: each question is validated against its own variant. */
export const SystemOneEnvelope = Type.Object({
  ...requestMembers,
  questions: Type.Record(MemberName, JsonObject, { minProperties: 1 }),
});

// ---- response ----

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
  cpu_variant: Type.Optional(Type.String()),
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
