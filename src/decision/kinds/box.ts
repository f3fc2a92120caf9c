// box (preview): locate what the instructions describe in the request's image. The API takes box
// questions so clients written for them get a precise answer rather than a schema error; no
// engine here reads images, so each one is refused by name. A vision engine fills it in by giving
// this module render and answer, turning it into a QuestionKind.
import type { Entry } from '../schema/entry.js';
import { renderEntry } from './criteria.js';
import type { PreviewKind } from './kind.js';

export interface BoxSpec {
  kind: 'box';
  name: string;
  instructions: string | null;
}

export const box: PreviewKind<BoxSpec> = {
  normalise(name, q) {
    return { spec: { kind: 'box', name, instructions: renderEntry(q.instructions as Entry | undefined) }, errors: [] };
  },

  refusal: () =>
    'box questions locate something in an image, and the served model is text-only: it cannot read images, so it cannot answer them (box answers are a preview for vision models)',
};
