import t from 'tap';
import { buildBranch, buildPrefix, optionCount } from '../../src/decision/prompt.js';
import type { QuestionSpec } from '../../src/decision/normalise.js';
import type { PromptInfo } from '../../src/decision/prompt.js';

const info: PromptInfo = {
  frame: { head: '<start_of_turn>user\n', tail: '<end_of_turn>\n<start_of_turn>model\n', plain: false },
  optionLabels: ['A', 'B', 'C', 'D'].map((label, i) => ({ label, token: 100 + i })),
  yes: { label: 'Yes', token: 7 },
  no: { label: 'No', token: 8 },
};

const choice: QuestionSpec = {
  kind: 'choice',
  name: 'secret_name_q1',
  instructions: 'What is this ticket about?',
  options: [
    { label: 'billing', description: 'money matters' },
    { label: 'technical', description: null },
    { label: 'other', description: null },
  ],
};

t.test('prefix: head, context block, ends at a newline', async (t) => {
  t.equal(buildPrefix(info.frame, 'I was charged twice.'), '<start_of_turn>user\nContext:\nI was charged twice.\n');
  t.ok(buildPrefix({ head: '', tail: '\nAnswer:', plain: true }, '{"a":1}').endsWith('\n'));
});

t.test('choice suffix: letters in order, tail last, name hidden', async (t) => {
  const b = buildBranch(choice, [0, 1, 2], info);
  t.equal(
    b.suffix,
    'Question: What is this ticket about?\nOptions:\nA. billing - money matters\nB. technical\nC. other\nReply with only the letter of the best option.<end_of_turn>\n<start_of_turn>model\n',
  );
  t.same(b.candidates, [100, 101, 102]);
  t.notMatch(b.suffix, /secret_name_q1/);
  t.notMatch(b.suffix, /^\s/);
});

t.test('a permuted ordering moves options, not letters', async (t) => {
  const b = buildBranch(choice, [2, 0, 1], info);
  t.match(b.suffix, 'A. other\nB. billing - money matters\nC. technical\n');
  t.same(b.candidates, [100, 101, 102], 'candidates are the letters by position');
});

t.test('score suffix shows level indices', async (t) => {
  const q: QuestionSpec = { kind: 'score', name: 's', instructions: null, levels: ['none', '', 'a lot'] };
  const b = buildBranch(q, [1, 2, 0], info);
  t.match(b.suffix, /^Levels:\nA\. 1\nB\. 2 - a lot\nC\. 0 - none\nReply with only the letter of the best matching level\./);
  t.equal(optionCount(q), 3);
});

t.test('noul suffix: yes/no order follows the ordering, tokens follow the order', async (t) => {
  const plain: QuestionSpec = { kind: 'noul', name: 'n', instructions: 'Is this about billing?', yes: 'it is billing', no: null };
  const first = buildBranch(plain, [0, 1], info);
  t.equal(first.suffix, 'Question: Is this about billing?\nYes means: it is billing\nReply with only Yes or No.' + info.frame.tail);
  t.same(first.candidates, [7, 8]);
  const swapped = buildBranch(plain, [1, 0], info);
  t.match(swapped.suffix, 'Reply with only No or Yes.');
  t.same(swapped.candidates, [8, 7]);
  t.equal(optionCount(plain), 2);
});

t.test('no instructions: the suffix starts with the options, never whitespace', async (t) => {
  const q: QuestionSpec = { kind: 'noul', name: 'n', instructions: null, yes: null, no: null };
  t.equal(buildBranch(q, [0, 1], info).suffix, 'Reply with only Yes or No.' + info.frame.tail);
  const blank: QuestionSpec = { ...choice, instructions: '  ' } as QuestionSpec;
  t.match(buildBranch(blank, [0, 1, 2], info).suffix, /^Options:/);
});

t.test('labels are shown trimmed even when the token carries a leading space', async (t) => {
  const spaced: PromptInfo = { ...info, optionLabels: info.optionLabels.map((l) => ({ ...l, label: ` ${l.label}` })), yes: { label: ' yes', token: 1 }, no: { label: ' no', token: 2 } };
  t.match(buildBranch(choice, [0, 1, 2], spaced).suffix, '\nA. billing');
  t.match(buildBranch({ kind: 'noul', name: 'n', instructions: 'q?', yes: null, no: null }, [0, 1], spaced).suffix, 'Reply with only yes or no.');
});
