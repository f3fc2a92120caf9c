// The Stanford Sentiment Treebank's five-class sentences (SST-5), dev and train splits: the
// treebank's PTB trees, one sentence a line, `(3 (2 It) (4 (4 (2 's) ...)))`, every node
// labelled 0 (very negative) to 4 (very positive); the root's label is the sentence's.
import { detokenise } from './ptb.js';
import type { Item, PublicSet } from './set.js';

const LEVELS = ['very negative', 'negative', 'neutral', 'positive', 'very positive'];
const ROOT = /^\((\d) /;
const LEAF = /\(\d ([^()\s]+)\)/g;

export function readTrees(text: string): Item[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const label = ROOT.exec(line)?.[1];
      const tokens = [...line.matchAll(LEAF)].map((m) => m[1]!);
      if (label === undefined || Number(label) >= LEVELS.length || tokens.length === 0) throw new Error(`sst5 tree ${i + 1}: not a labelled tree`);
      return {
        state: detokenise(tokens),
        questions: { sentiment: { type: 'score', instructions: 'Rate the sentiment of this sentence.', criteria: LEVELS } },
        truth: { sentiment: Number(label) },
      };
    });
}

export const sst5: PublicSet = {
  name: 'sst5',
  title: 'Stanford Sentiment Treebank, 5 levels (SST-5)',
  citation: 'Socher et al. 2013, "Recursive Deep Models for Semantic Compositionality Over a Sentiment Treebank", EMNLP',
  files: [
    {
      name: 'dev.txt',
      split: 'dev',
      source:
        'nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip, member trees/dev.txt (copies with these bytes: github.com/aykutfirat/pyTorchTree and github.com/weizhenzhao/cs224d_problem_set3, trees/dev.txt, git blob bbc5d066)',
      sha256: '0e9336aed6e4730e19f58d00a77b3f0297efdb755f7b5e598c98a05e3f97ea40',
      bytes: 280825,
    },
    {
      name: 'train.txt',
      split: 'train',
      source:
        'nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip, member trees/train.txt (a copy with these bytes: github.com/aykutfirat/pyTorchTree, trees/train.txt)',
      sha256: 'e2f3f41b0b1e6d4dddc0effe3bfc2d27ed8928079aa9a03d652311614fc5feb7',
      bytes: 2160058,
    },
  ],
  read: readTrees,
};
