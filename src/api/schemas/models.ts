// GET /v1/models.
import { Type, type Static } from '@sinclair/typebox';

export const ModelInfo = Type.Object({
  id: Type.String(),
  object: Type.Optional(Type.String({ default: 'model' })),
  owned_by: Type.Optional(Type.String({ default: 'arbitra' })),
  max_context_tokens: Type.Integer(),
  description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /** The third party's SDK shows models as cards with a name and a release date. */
  name: Type.Optional(Type.String()),
  /** YYYY-MM-DD: when the served model file was last written. */
  release_date: Type.Optional(Type.String()),
});
export type ModelInfo = Static<typeof ModelInfo>;

export const ModelsListResponse = Type.Object({
  object: Type.Optional(Type.String({ default: 'list' })),
  data: Type.Array(ModelInfo),
  /** The third party's SDK reads the list from `models`; it carries the same entries as `data`. */
  models: Type.Optional(Type.Array(ModelInfo)),
});
export type ModelsListResponse = Static<typeof ModelsListResponse>;
