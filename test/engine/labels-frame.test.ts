// labels.ts and frame.ts as pure units, over fake tokenizers and fake chat templates.
import t from 'tap';
import { findOptionLabels, findYesNo, MAX_OPTION_LABELS } from '../../src/engine/labels.js';
import { PLAIN_FRAME, promptFrame } from '../../src/engine/frame.js';

/** A tokenizer where every string in `single` is one token (ids in insertion order) and anything else is two. */
function fakeTokenizer(single: Iterable<string>, aliases: Record<string, string> = {}) {
  const ids = new Map<string, number>();
  for (const s of single) ids.set(s, ids.size + 100);
  return (text: string): Int32Array => {
    const id = ids.get(aliases[text] ?? text);
    return id === undefined ? Int32Array.from([1, 2]) : Int32Array.from([id]);
  };
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('');
const PAIRS = LETTERS.flatMap((a) => LETTERS.map((b) => a + b));

t.test('option labels: single letters first, then single-token pairs, in order', async (t) => {
  const labels = findOptionLabels(fakeTokenizer([...LETTERS, 'AB', 'ZZ']));
  t.same(labels.map((l) => l.label), [...LETTERS, 'AB', 'ZZ']);
  t.equal(labels[0]!.token, 100);
  t.equal(labels[27]!.token, 127, 'each label carries its own token id');
});

t.test('option labels: multi-token letters are skipped, duplicate token ids kept once', async (t) => {
  const tokenize = fakeTokenizer(['A', 'C', 'AA', 'AC'], { B: 'A', AB: 'AA' });
  const labels = findOptionLabels(tokenize);
  t.same(labels.map((l) => l.label), ['A', 'C', 'AA', 'AC'], 'B and AB share tokens with A and AA; D.. are two tokens');
  t.equal(new Set(labels.map((l) => l.token)).size, labels.length);
});

t.test('option labels stop at the maximum', async (t) => {
  const labels = findOptionLabels(fakeTokenizer([...LETTERS, ...PAIRS]));
  t.equal(labels.length, MAX_OPTION_LABELS);
  t.equal(labels.at(-1)!.label, PAIRS[MAX_OPTION_LABELS - 27], 'the last label is the 229th pair');
});

t.test('option labels: an empty vocabulary gives none', async (t) => {
  t.same(findOptionLabels(fakeTokenizer([])), []);
});

t.test('yes/no: the first single-token spelling wins', async (t) => {
  const both = findYesNo(fakeTokenizer(['yes', 'Yes', 'No', 'no']));
  t.same(both.yes, { label: 'Yes', token: 101 });
  t.same(both.no, { label: 'No', token: 102 });
  const lower = findYesNo(fakeTokenizer(['yes', 'no', 'N']));
  t.same([lower.yes.label, lower.no.label], ['yes', 'no']);
  const letters = findYesNo(fakeTokenizer(['Y', 'N']));
  t.same([letters.yes.label, letters.no.label], ['Y', 'N']);
});

t.test('yes/no: a vocabulary without any spelling is an error naming them', async (t) => {
  t.throws(() => findYesNo(fakeTokenizer(['Yes'])), /No, no, NO, N/);
  t.throws(() => findYesNo(fakeTokenizer(['No'])), /Yes, yes, YES, Y/);
});

t.test('frame: no template gives the plain layout', async (t) => {
  const frame = promptFrame(() => null);
  t.same(frame, PLAIN_FRAME);
  t.equal(frame.plain, true);
  t.equal(frame.head, '');
  t.match(frame.tail, /Answer:\n$/);
});

t.test('frame: a chat template is split around the user message', async (t) => {
  const gemma = (m: string) => `<bos><start_of_turn>user\n${m}<end_of_turn>\n<start_of_turn>model\n`;
  const frame = promptFrame(gemma);
  t.same(frame, { head: '<bos><start_of_turn>user\n', tail: '<end_of_turn>\n<start_of_turn>model\n', plain: false });
  t.equal(frame.head + 'hello' + frame.tail, gemma('hello'), 'head + message + tail renders the template');
});

t.test('frame: templates that drop or repeat the message fall back to the plain layout', async (t) => {
  t.same(promptFrame(() => 'fixed text'), PLAIN_FRAME, 'message dropped');
  t.same(promptFrame((m) => `${m}\n${m}`), PLAIN_FRAME, 'message repeated');
});
