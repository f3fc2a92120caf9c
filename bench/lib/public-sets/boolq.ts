// BoolQ: naturally occurring yes/no questions, each about a Wikipedia passage, as JSON lines
// `{"question", "title", "answer", "passage"}`. The question is published lower-case and without
// its question mark (`does ethanol take more energy make that produces`); the bench restores both.
import type { Item, PublicSet } from './set.js';

interface Line {
  question: string;
  title: string;
  answer: boolean;
  passage: string;
}

/** A published question as a person would write it. */
export function asQuestion(q: string): string {
  const s = q.trim();
  return `${s.charAt(0).toUpperCase()}${s.slice(1)}${s.endsWith('?') ? '' : '?'}`;
}

export function readLines(text: string): Item[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const l = JSON.parse(line) as Partial<Line>;
      if (typeof l.question !== 'string' || typeof l.title !== 'string' || typeof l.passage !== 'string' || typeof l.answer !== 'boolean') {
        throw new Error(`boolq line ${i + 1}: not {question, title, answer, passage}`);
      }
      return { state: `${l.title}\n${l.passage}`, questions: { answer: { type: 'noul', instructions: asQuestion(l.question) } }, truth: { answer: l.answer } };
    });
}

export const boolq: PublicSet = {
  name: 'boolq',
  title: 'BoolQ, yes/no questions about a Wikipedia passage',
  citation: 'Clark et al. 2019, "BoolQ: Exploring the Surprising Difficulty of Natural Yes/No Questions", NAACL',
  files: [
    {
      name: 'dev.jsonl',
      split: 'dev',
      source:
        'storage.googleapis.com/boolq/dev.jsonl (github.com/google-research-datasets/boolean-questions links it; a copy with these bytes: github.com/d-eremeev/BoolQ-Question-Answering, data/dev.jsonl)',
      sha256: 'ebc29ea3808c5c611672384b3de56e83349fe38fc1fe876fd29b674d81d0a80a',
      bytes: 2238726,
    },
    {
      name: 'train.jsonl',
      split: 'train',
      source:
        'storage.googleapis.com/boolq/train.jsonl (github.com/google-research-datasets/boolean-questions links it; github.com/d-eremeev/BoolQ-Question-Answering, data/train.jsonl, git blob abcf2e3d, is a copy)',
      sha256: null,
      bytes: null,
    },
  ],
  read: readLines,
};
