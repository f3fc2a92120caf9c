// The public sets' readers, sample and checksum gate, on fixtures written here: the real files stay
// out of the repository, and no test may need a developer to have brought them.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { checkCases, truthIndex, type LabelledCase } from '../../bench/lib/cases.js';
import { agnews, csvRows } from '../../bench/lib/public-sets/agnews.js';
import { boolq } from '../../bench/lib/public-sets/boolq.js';
import { detokenise } from '../../bench/lib/public-sets/ptb.js';
import { SETS } from '../../bench/lib/public-sets/index.js';
import { loadSet, openSet, Refusal, sample } from '../../bench/lib/public-sets/load.js';
import type { PublicSet } from '../../bench/lib/public-sets/set.js';
import { sst5 } from '../../bench/lib/public-sets/sst5.js';
import { trec } from '../../bench/lib/public-sets/trec.js';
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';

/** Items as cases, checked as the benches check them: each a valid request, each truth an option. */
const asCases = (set: PublicSet, text: string): LabelledCase[] =>
  checkCases(set.read(text).map((item, i) => ({ id: `${set.name}:${i}`, domain: set.name, ...item })));
const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

const TREES = [
  "(3 (2 It) (4 (4 (2 's) (4 (3 (2 a) (4 (3 lovely) (2 film))))) (2 .)))",
  "(1 (2 (2 -LRB-) (2 (2 Næs) (2 -RRB-))) (1 (2 (2 does) (2 n't)) (1 (2 ``) (2 (2 work) (2 (2 '') (2 (2 writer\\/director) (2 ,)))))))",
].join('\n');

t.test('PTB tokens back to prose: whole closing tokens join the word before, nothing else moves', async (t) => {
  t.equal(detokenise("There 's ... tremendous energy -LRB- Grant 's -RRB- , does n't it ?".split(' ')), "There's... tremendous energy (Grant's), doesn't it?");
  t.equal(detokenise('What is the full form of .com ?'.split(' ')), 'What is the full form of .com?', 'a token that only begins with a stop keeps its space');
  t.equal(detokenise(['writer\\/director', '``', 'hi', "''"]), 'writer/director " hi "');
});

t.test('sst5: the root label is the level, the leaves the sentence, PTB escapes undone', async (t) => {
  const [first, second] = asCases(sst5, `${TREES}\n`);
  t.equal(first!.state, "It's a lovely film.");
  t.same(first!.truth, { sentiment: 3 });
  t.equal(second!.state, '(Næs) doesn\'t " work " writer/director,', 'quotes keep their spaces: which way one faces is a guess');
  t.same(second!.truth, { sentiment: 1 });
  const [spec] = validateSystemOneRequest({ state: first!.state, questions: first!.questions }).questions;
  t.equal(spec!.kind, 'score');
  t.same(spec!.kind === 'score' && spec!.levels.length, 5);
  t.throws(() => sst5.read('(7 (2 x))'), /sst5 tree 1: not a labelled tree/);
  t.throws(() => sst5.read('not a tree'), /not a labelled tree/);
});

t.test('boolq: title and passage are the state, the question gets its capital and question mark back', async (t) => {
  const lines = [
    { question: 'is the sky blue', title: 'Sky', answer: true, passage: 'The sky is blue by day.' },
    { question: 'Can fish fly?', title: 'Fish', answer: false, passage: 'Most fish swim.' },
  ];
  const [a, b] = asCases(boolq, lines.map((l) => JSON.stringify(l)).join('\n'));
  t.equal(a!.state, 'Sky\nThe sky is blue by day.');
  t.same(a!.questions, { answer: { type: 'noul', instructions: 'Is the sky blue?' } });
  t.same(a!.truth, { answer: true });
  t.equal((b!.questions.answer as { instructions: string }).instructions, 'Can fish fly?');
  t.same(b!.truth, { answer: false });
  t.throws(() => boolq.read(JSON.stringify({ question: 'x', title: 'y', answer: 'yes', passage: 'z' })), /boolq line 1/);
});

t.test('agnews: quoted CSV, class 1-4 as the label, a backslash read as the line break it stood for', async (t) => {
  const csv = [
    '"3","Carlyle Looks Toward Commercial Aerospace (Reuters)","Reuters - Private investment firm Carlyle Group,\\which has a reputation"',
    '"4","Google #39;s ""big"" day","Shares rose #36;5, and more."',
    '"2","Final","Two, lines"',
    '"1","A","B"',
  ].join('\r\n');
  const cases = asCases(agnews, `${csv}\r\n`);
  t.same(
    cases.map((c) => c.truth.topic),
    ['Business', 'Sci/Tech', 'Sports', 'World'],
  );
  t.equal(cases[0]!.state, 'Carlyle Looks Toward Commercial Aerospace (Reuters)\nReuters - Private investment firm Carlyle Group, which has a reputation');
  t.equal(cases[1]!.state, 'Google #39;s "big" day\nShares rose #36;5, and more.', 'entities stay as published');
  const [spec] = validateSystemOneRequest({ state: cases[0]!.state, questions: cases[0]!.questions }).questions;
  t.same(spec!.kind === 'choice' && spec!.options.map((o) => o.label), ['World', 'Sports', 'Business', 'Sci/Tech']);
  t.equal(truthIndex(spec!, 'Sci/Tech'), 3);
  t.same(csvRows('"a","b\nc"\n"d",""'), [
    ['a', 'b\nc'],
    ['d', ''],
  ]);
  t.throws(() => agnews.read('"5","t","d"'), /agnews row 1/);
  t.throws(() => agnews.read('"1","only a title"'), /agnews row 1/);
});

t.test('trec: the coarse class is the label, the question the state', async (t) => {
  const cases = asCases(trec, 'DESC:manner How did serfdom develop in and then leave Russia ?\nABBR:exp What is the full form of .com ?\n');
  t.same(
    cases.map((c) => [c.state, c.truth.kind]),
    [
      ['How did serfdom develop in and then leave Russia?', 'description'],
      ['What is the full form of .com?', 'abbreviation'],
    ],
  );
  const [spec] = validateSystemOneRequest({ state: cases[0]!.state, questions: cases[0]!.questions }).questions;
  t.equal(spec!.kind === 'choice' && spec!.options.length, 6);
  t.throws(() => trec.read('XYZ:foo What ?'), /trec line 1/);
});

t.test('the sample: the same on every run, and a larger one begins with every smaller one', async (t) => {
  const ten = sample('sst5', 1000, 10);
  t.same(sample('sst5', 1000, 10), ten);
  t.same(sample('sst5', 1000, 200).slice(0, 10), ten);
  t.same(
    sample('sst5', 5000, 5000)
      .filter((i) => i < 1000)
      .slice(0, 10),
    ten,
    'an item keeps its rank however many the file holds',
  );
  t.not(sample('boolq', 1000, 10).join(), ten.join(), 'each set has its own order');
  t.equal(new Set(sample('sst5', 1000, 1000)).size, 1000);
  t.equal(sample('sst5', 3, 10).length, 3);
});

t.test('the registry: dev and train files only, names unique, checksums well formed', async (t) => {
  const files = SETS.flatMap((s) => s.files);
  t.equal(new Set(files.map((f) => f.name)).size, files.length, 'a folder names its set by its files');
  for (const f of files) {
    t.ok(['dev', 'train'].includes(f.split), f.name);
    t.ok(f.sha256 === null || /^[0-9a-f]{64}$/.test(f.sha256), f.name);
  }
});

t.test('a folder is read only when it holds a known file with the published bytes', async (t) => {
  const dir = t.testdir({ wrong: { 'dev.txt': '(2 (2 not) (2 it))\n' }, other: { 'notes.txt': 'x' } });
  const wrong = path.join(dir, 'wrong');
  const error = t.throws(() => openSet(wrong)) as Error;
  t.ok(error instanceof Refusal);
  const expected = SETS.find((s) => s.name === 'sst5')!.files[0]!.sha256;
  t.match(error.message, `expected sha256 ${expected}`);
  t.match(error.message, `found sha256 ${sha256('(2 (2 not) (2 it))\n')}, 19 bytes`);
  t.throws(() => openSet(path.join(wrong, 'dev.txt')), /is not the published file/, 'named as a file, too');
  t.throws(() => openSet(path.join(dir, 'other')), /holds none of the files the bench knows/);
  t.throws(() => openSet(path.join(dir, 'missing')), /no such file or folder/);

  const unknown: PublicSet = { ...sst5, files: [{ name: 'dev.txt', split: 'dev', source: 'here', sha256: null, bytes: null }] };
  t.throws(() => openSet(wrong, [unknown]), /no checksum is registered for sst5's dev.txt/);
});

t.test('a verified file loads as its sample of checked cases', async (t) => {
  const dir = t.testdir({ 'dev.txt': TREES });
  const fake: PublicSet = { ...sst5, files: [{ name: 'dev.txt', split: 'dev', source: 'here', sha256: sha256(TREES), bytes: Buffer.byteLength(TREES) }] };
  const loaded = loadSet(dir, 1, [fake]);
  t.equal(loaded.total, 2);
  t.equal(loaded.arg, 'data/public/sst5');
  t.equal(loaded.tag, 'sst5');
  t.same(
    loaded.cases.map((c) => c.id),
    [`sst5:${sample('sst5', 2, 1)[0]}`],
  );
  t.equal(loaded.cases[0]!.domain, 'sst5');
});

/** The module as a child process imports it, by URL: the child is not TypeScript importing TypeScript. */
const LOAD = new URL('../../bench/lib/public-sets/load.ts', import.meta.url).href;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

t.test('a bench given a refused folder or a bad --items ends with status 2 and says why', async (t) => {
  const dir = t.testdir({ 'dev.txt': 'x' });
  const run = (...args: string[]) =>
    spawnSync(
      process.execPath,
      [
        '--import=./scripts/ts-loader.mjs',
        '--input-type=module',
        '-e',
        `const { setsFromArgs } = await import(${JSON.stringify(LOAD)}); setsFromArgs(Infinity, ${JSON.stringify(args)});`,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
  const refused = run('--set', dir);
  t.equal(refused.status, 2);
  t.match(refused.stderr, /dev.txt is not the published file: expected sha256 [0-9a-f]{64}, \d+ bytes; found sha256 [0-9a-f]{64}, 1 bytes/);
  t.equal(run('--set', dir, '--items', '0').status, 2);
  t.equal(run('--items', '5').status, 2, '--items without --set');
});
