// noul: yes or no. The options are [yes, no]; an ordering decides which one is offered first.
import type { NoulAnswer } from '../../api/schemas/systemone.js';
import type { Entry } from '../../api/schemas/common.js';
import { questionBody } from '../prompt.js';
import { renderEntry } from './criteria.js';
import type { QuestionKind } from './kind.js';

export interface NoulSpec {
  kind: 'noul';
  name: string;
  instructions: string | null;
  /** What a yes / a no means, when the client described them. */
  yes: string | null;
  no: string | null;
}

export const noul: QuestionKind<NoulSpec, NoulAnswer> = {
  normalise(name, q) {
    const criteria = (q.criteria ?? null) as { true?: Entry; false?: Entry } | null;
    const instructions = renderEntry(q.instructions as Entry | undefined);
    return { spec: { kind: 'noul', name, instructions, yes: renderEntry(criteria?.true), no: renderEntry(criteria?.false) }, errors: [] };
  },

  options: () => 2,

  capacity: () => 2,

  render(spec, ordering, { labels }) {
    const answers = [
      { word: labels.yes.label, tokens: labels.yes.tokens, meaning: spec.yes },
      { word: labels.no.label, tokens: labels.no.tokens, meaning: spec.no },
    ];
    const shown = ordering.map((i) => answers[i]!);
    const lines = shown.filter((a) => a.meaning).map((a) => `${a.word} means: ${a.meaning}`);
    return { text: questionBody(spec.instructions, lines, `Reply with only ${shown[0]!.word} or ${shown[1]!.word}.`), answers: shown.map((a) => a.tokens) };
  },

  answer(_spec, r) {
    return {
      type: 'noul',
      noul: r.p[0]!,
      confidence_band: r.band,
      raw_noul: r.raw ? r.raw[0]! : null,
      debias_passes: r.debiasPasses,
      label_mass: r.labelMass,
    };
  },
};
