// TREC question classification (the six coarse classes of Li and Roth's set): what kind of answer a
// question asks for. One question a line, `DESC:manner How did serfdom develop in and then leave
// Russia ?`, the coarse class before the colon, the fine one after it, the question tokenised the
// Penn Treebank way. train_5500.label is the training set; TREC_10.label, the test set, is never read.
// The file is ASCII but for one byte, 0xF0 between `sister` and `city`, which reads as U+FFFD.
import { detokenise } from './ptb.js';
import type { Item, PublicSet } from './set.js';

/** Li and Roth's coarse classes, named and described by their fine classes. */
const CLASSES: Record<string, [string, string]> = {
  ABBR: ['abbreviation', 'an abbreviation, or what one stands for'],
  DESC: ['description', 'a definition, a description, a manner or a reason'],
  ENTY: ['entity', 'a thing: an animal, colour, food, product, event, term, language and the like'],
  HUM: ['human', 'a person, a group or an organisation, or a description of one'],
  LOC: ['location', 'a place: a city, country, state, mountain and the like'],
  NUM: ['number', 'a number: a count, date, amount of money, distance, period, percentage and the like'],
};
const CRITERIA = Object.fromEntries(Object.values(CLASSES));
const LINE = /^([A-Z]+):\S+ (.+)$/;

export function readQuestions(text: string): Item[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const [, coarse, question] = LINE.exec(line.trim()) ?? [];
      const label = CLASSES[coarse ?? '']?.[0];
      if (label === undefined || question === undefined) throw new Error(`trec line ${i + 1}: not CLASS:fine question`);
      return {
        state: detokenise(question.split(' ')),
        questions: { kind: { type: 'choice', instructions: 'What kind of answer does this question ask for?', criteria: CRITERIA } },
        truth: { kind: label },
      };
    });
}

export const trec: PublicSet = {
  name: 'trec',
  title: 'TREC question classification, 6 classes',
  citation: 'Li and Roth 2002, "Learning Question Classifiers", COLING',
  files: [
    {
      name: 'train_5500.label',
      split: 'train',
      source:
        'cogcomp.seas.upenn.edu/Data/QA/QC/train_5500.label (md5 073462e3…, the one torchtext checks; a copy with these bytes: github.com/brmson/question-classification, data/train_5500.label)',
      sha256: '9e4c8bdcaffb96ed61041bd64b564183d52793a8e91d84fc3a8646885f466ec3',
      bytes: 335858,
    },
  ],
  read: readQuestions,
};
