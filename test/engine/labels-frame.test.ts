// labels.ts and frame.ts as pure units, over fake tokenizers and fake chat templates.
import t from 'tap';
import { findDigitLabels, findOptionLabels, findYesNo, MAX_OPTION_LABELS } from '../../src/engine/labels.js';
import { plainFrame, promptFrame, type ChatMessage } from '../../src/engine/frame.js';

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
  t.same(
    labels.map((l) => l.label),
    [...LETTERS, 'AB', 'ZZ'],
  );
  t.same(labels[0]!.tokens, [100]);
  t.same(labels[27]!.tokens, [127], 'each label carries its own token id');
});

t.test('option labels: the leading-space spelling counts too, when it is one token', async (t) => {
  const labels = findOptionLabels(fakeTokenizer([...LETTERS, ' A', ' B']));
  t.same(labels[0]!.tokens, [100, 126], '"A" and " A"');
  t.same(labels[1]!.tokens, [101, 127]);
  t.same(labels[2]!.tokens, [102], '" C" is two tokens: only "C"');
});

t.test('option labels: multi-token letters are skipped, duplicate token ids kept once', async (t) => {
  const tokenize = fakeTokenizer(['A', 'C', 'AA', 'AC'], { B: 'A', AB: 'AA' });
  const labels = findOptionLabels(tokenize);
  t.same(
    labels.map((l) => l.label),
    ['A', 'C', 'AA', 'AC'],
    'B and AB share tokens with A and AA; D.. are two tokens',
  );
  t.equal(new Set(labels.flatMap((l) => l.tokens)).size, labels.length);
});

t.test('option labels: a spelling another label already owns is not counted twice', async (t) => {
  // " A" happens to be the token of "B": it must stay B's alone.
  const labels = findOptionLabels(fakeTokenizer(['A', 'B'], { ' A': 'B' }));
  t.same(
    labels.map((l) => l.tokens),
    [[100], [101]],
  );
});

t.test('option labels stop at the maximum', async (t) => {
  const labels = findOptionLabels(fakeTokenizer([...LETTERS, ...PAIRS]));
  t.equal(labels.length, MAX_OPTION_LABELS);
  t.equal(labels.at(-1)!.label, PAIRS[MAX_OPTION_LABELS - 27], 'the last label is the 229th pair');
});

t.test('option labels: an empty vocabulary gives none', async (t) => {
  t.same(findOptionLabels(fakeTokenizer([])), []);
});

t.test('digit labels: 0-9 with their spaced spellings, or none when a digit is not one token', async (t) => {
  const digits = '0123456789'.split('');
  const found = findDigitLabels(fakeTokenizer([...digits, ' 7']));
  t.same(
    found.map((d) => d.label),
    digits,
  );
  t.same(found[7]!.tokens, [107, 110]);
  t.same(findDigitLabels(fakeTokenizer(digits.slice(0, 9))), [], '"9" is two tokens');
});

t.test('yes/no: the first single-token spelling is shown, every single-token spelling counts', async (t) => {
  const both = findYesNo(fakeTokenizer(['yes', 'Yes', 'No', 'no', ' yes', 'NO']));
  t.same(both.yes, { label: 'Yes', tokens: [101, 100, 104] }, 'Yes, then yes and " yes"');
  t.same(both.no, { label: 'No', tokens: [102, 103, 105] });
  const lower = findYesNo(fakeTokenizer(['yes', 'no', 'N', 'Y']));
  t.same([lower.yes.label, lower.no.label], ['yes', 'no']);
  t.same(lower.yes.tokens, [100], 'a single letter is not counted when a word spelling exists');
  const letters = findYesNo(fakeTokenizer(['Y', 'N']));
  t.same([letters.yes.label, letters.no.label], ['Y', 'N']);
});

t.test('yes/no: a vocabulary without any spelling is an error naming them', async (t) => {
  t.throws(() => findYesNo(fakeTokenizer(['Yes'])), /No, no, NO, N/);
  t.throws(() => findYesNo(fakeTokenizer(['No'])), /Yes, yes, YES, Y/);
});

t.test('frame: no template gives the plain layout, with the system text on top', async (t) => {
  const frame = promptFrame(() => null, null);
  t.same(frame, plainFrame(null));
  t.equal(frame.plain, true);
  t.equal(frame.head, '');
  t.match(frame.tail, /Answer:\n$/);
  t.equal(promptFrame(() => null, 'Be brief.').head, 'Be brief.\n\n');
});

const chatml = (messages: ChatMessage[]) => messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';

t.test('frame: a chat template is split around the user message', async (t) => {
  const frame = promptFrame(chatml, null);
  t.same(frame, { head: '<|im_start|>user\n', tail: '<|im_end|>\n<|im_start|>assistant\n', plain: false });
  t.equal(frame.head + 'hello' + frame.tail, chatml([{ role: 'user', content: 'hello' }]), 'head + message + tail renders the template');
});

t.test("frame: the system text goes in the template's system turn", async (t) => {
  const frame = promptFrame(chatml, 'Answer with one label.');
  t.equal(frame.head, '<|im_start|>system\nAnswer with one label.<|im_end|>\n<|im_start|>user\n');
  t.equal(frame.plain, false);
});

t.test('frame: a template without a system turn gets the system text at the top of the user turn', async (t) => {
  const gemma = (messages: ChatMessage[]) =>
    `<start_of_turn>user\n${messages.filter((m) => m.role === 'user')[0]!.content}<end_of_turn>\n<start_of_turn>model\n`;
  const frame = promptFrame(gemma, 'Answer with one label.');
  t.equal(frame.head, '<start_of_turn>user\nAnswer with one label.\n\n');
});

t.test('frame: the sentinel holds no NUL, which llama.cpp would cut the message at', async (t) => {
  let seen = '';
  promptFrame((m) => {
    seen = m.at(-1)!.content;
    return null;
  }, null);
  t.ok(seen.length > 0);
  t.notOk(seen.includes('\u0000'));
});

t.test('frame: templates that drop or repeat the message fall back to the plain layout', async (t) => {
  t.same(
    promptFrame(() => 'fixed text', null),
    plainFrame(null),
    'message dropped',
  );
  t.same(
    promptFrame((m) => `${m.at(-1)!.content}\n${m.at(-1)!.content}`, null),
    plainFrame(null),
    'message repeated',
  );
});
