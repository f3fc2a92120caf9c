// How far the served probabilities' confidence is from their hit rate, per question type, as
// /health reports it (src/decision/served-quality.ts reads it off a calibration record).
import { Type, type Static } from '@sinclair/typebox';

export const TypeQuality = Type.Object({
  n: Type.Integer({ description: 'labelled questions of this type the figures were read from, each held out of the fit' }),
  overconfidence: Type.Number({ description: 'mean top probability minus the share of top answers that are right: > 0 claims too much' }),
  ece: Type.Number({ description: "expected calibration error of the top answer's probability, 10 equal-width bins" }),
  accuracy: Type.Number({ description: 'share of top answers that are right' }),
  calibrated: Type.Boolean({ description: 'true: served through the fitted map, and these are its figures; false: served as read' }),
});
export type TypeQuality = Static<typeof TypeQuality>;

export const QualityFigures = Type.Object({
  layout: Type.String({ description: 'the prompt layout the figures were measured under (the one served)' }),
  version: Type.String({ description: 'the calibration record they come from' }),
  source: Type.String({ description: 'the labelled data they were read from' }),
  calibration: Type.Union([Type.Literal('off'), Type.Literal('fitted'), Type.Literal('preset')], { description: 'the served --calibration' }),
  types: Type.Object({ noul: Type.Optional(TypeQuality), choice: Type.Optional(TypeQuality), score: Type.Optional(TypeQuality) }),
});
export type QualityFigures = Static<typeof QualityFigures>;

export const ServedQuality = Type.Union(
  [QualityFigures, Type.Object({ unavailable: Type.String({ description: 'why no figures describe what is served' }) }), Type.Null()],
  {
    description:
      "Per question type, the served model's calibration under the served layout and --calibration, measured held out on labelled data; null until the model is loaded",
  },
);
export type ServedQuality = Static<typeof ServedQuality>;
