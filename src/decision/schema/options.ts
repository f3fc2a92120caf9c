// How a request asks its questions to be answered.
import { Type, type Static } from '@sinclair/typebox';

export const OPTION_DEFAULTS = {
  debias: 'off',
  debias_passes: 4,
  return_raw_probabilities: false,
  retain: false,
} as const;

export const DecisionOptions = Type.Object({
  debias: Type.Optional(
    Type.Union([Type.Literal('off'), Type.Literal('permute')], {
      default: OPTION_DEFAULTS.debias,
      description:
        'permute pools reorderings of the options to cancel position bias: balanced rotations for a choice, yes and no swapped for a noul, the scale ascending and descending for a score.',
    }),
  ),
  debias_passes: Type.Optional(
    Type.Integer({ minimum: 2, maximum: 8, default: OPTION_DEFAULTS.debias_passes, description: 'orderings averaged when debias is permute' }),
  ),
  return_raw_probabilities: Type.Optional(
    Type.Boolean({ default: OPTION_DEFAULTS.return_raw_probabilities, description: 'add the single unpermuted pass as raw_probabilities / raw_noul' }),
  ),
  retain: Type.Optional(Type.Boolean({ default: OPTION_DEFAULTS.retain, description: 'keep the request and response for 30 days (see retention)' })),
});
export type DecisionOptions = Static<typeof DecisionOptions>;
