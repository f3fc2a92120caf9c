// noul: yes or no. The options are [yes, no]; an ordering decides which one is offered first.
import type { NoulAnswer } from '../schema/answers.js';
import type { Entry } from '../schema/entry.js';
import { questionBody } from '../prompt.js';
import { renderEntry } from './criteria.js';
import { onlyProbe, type Labels, type Probe, type QuestionKind } from './kind.js';

export interface NoulSpec {
  kind: 'noul';
  name: string;
  instructions: string | null;
  /** What a yes / a no means, when the client described them. */
  yes: string | null;
  no: string | null;
}

/**
 * A yes/no question about the context, answers [yes, no]; each ordering decides which is offered
 * first. `lines` come between the question and the meanings of yes and no.
 */
export function yesNoProbe(labels: Labels, instructions: string | null, meaning: { yes: string | null; no: string | null }, lines: string[] = []): Probe {
  const answers = [
    { word: labels.yes.label, tokens: labels.yes.tokens, meaning: meaning.yes },
    { word: labels.no.label, tokens: labels.no.tokens, meaning: meaning.no },
  ];
  return {
    answers: 2,
    render(ordering) {
      const shown = ordering.map((i) => answers[i]!);
      const meanings = shown.filter((a) => a.meaning).map((a) => `${a.word} means: ${a.meaning}`);
      return {
        text: questionBody(instructions, [...lines, ...meanings], `Reply with only ${shown[0]!.word} or ${shown[1]!.word}.`),
        answers: shown.map((a) => a.tokens),
      };
    },
  };
}

export const noul: QuestionKind<NoulSpec, NoulAnswer> = {
  normalise(name, q) {
    const criteria = (q.criteria ?? null) as { true?: Entry; false?: Entry } | null;
    const instructions = renderEntry(q.instructions as Entry | undefined);
    return { spec: { kind: 'noul', name, instructions, yes: renderEntry(criteria?.true), no: renderEntry(criteria?.false) }, errors: [] };
  },

  options: () => 2,

  capacity: () => 2,

  probes: (spec, { labels }) => [yesNoProbe(labels, spec.instructions, { yes: spec.yes, no: spec.no })],

  combine: onlyProbe,

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
