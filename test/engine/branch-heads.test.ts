// Branch grouping by shared heads: the pure grouping, and on the real test model that a request
// whose branches begin alike is scored bit for bit as each branch alone, with fewer tokens.
import t from 'tap';
import { groupBranchHeads } from '../../src/engine/branch-heads.js';
import { createLocalEngine } from '../../src/engine/local.js';
import type { TextScoreRequest } from '../../src/engine/types.js';
import { TEST_MODEL } from '../helpers/models.js';

const tokens = (...xs: number[]) => Int32Array.from(xs);
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

t.test('branches sharing a long enough head form a group; the rest stay together with no head', async (t) => {
  const head = range(100, 10);
  const suffixes = [tokens(...head, 1, 2), tokens(7, 8, 9), tokens(...head, 3), tokens(...head, 1, 4), tokens(7, 8, 10)];
  const groups = groupBranchHeads(suffixes, 8);
  t.equal(groups.length, 2);
  t.same(Array.from(groups[0]!.head), head, 'the head the three alike branches share');
  t.same(
    groups[0]!.members.map((m) => m.index),
    [0, 2, 3],
    'members in request order',
  );
  t.same(
    groups[0]!.members.map((m) => Array.from(m.rest)),
    [[1, 2], [3], [1, 4]],
    'each keeps what follows the head',
  );
  t.equal(groups[1]!.head.length, 0, 'a head of two tokens is too short to share');
  t.same(
    groups[1]!.members.map((m) => m.index),
    [1, 4],
  );
});

t.test('a branch keeps at least its last token, where its answer is read', async (t) => {
  const a = tokens(...range(1, 12));
  const groups = groupBranchHeads([a, a.slice(), tokens(...range(1, 12), 50)], 8);
  t.equal(groups.length, 1);
  t.equal(groups[0]!.head.length, 11, "the head stops before the shortest member's last token");
  t.ok(groups[0]!.members.every((m) => m.rest.length >= 1));
});

t.test('every branch is in exactly one group', async (t) => {
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let trial = 0; trial < 200; trial++) {
    const suffixes = Array.from({ length: 1 + rand(12) }, () => tokens(...Array.from({ length: 1 + rand(14) }, () => rand(3))));
    const groups = groupBranchHeads(suffixes, 2);
    const seen = groups.flatMap((g) => g.members.map((m) => m.index)).sort((a, b) => a - b);
    t.same(
      seen,
      suffixes.map((_, i) => i),
      `trial ${trial}: each index once`,
    );
    for (const g of groups) {
      for (const m of g.members) t.same([...g.head, ...m.rest], Array.from(suffixes[m.index]!), `trial ${trial}: head + rest is the suffix`);
    }
  }
});

t.test('grouped scoring on the real model: bit-identical to each branch alone, fewer tokens', async (t) => {
  const local = await createLocalEngine(TEST_MODEL, { threads: 2, contextSize: 1024, maxSequences: 16 });
  t.teardown(() => local.close());
  const question = 'Question: Which team should handle this ticket, given what the customer asks for?\nOptions:\n';
  const orders = [
    ['billing', 'support', 'sales'],
    ['support', 'sales', 'billing'],
    ['sales', 'billing', 'support'],
  ];
  const answers = (await local.info()).optionLabels.slice(0, 3).map((l) => Array.from(l.tokens));
  const request = (prefix: string, orderList: string[][]): TextScoreRequest => ({
    system: null,
    prefix,
    branches: orderList.map((o) => ({ suffix: `${question}${o.map((x, i) => `${'ABC'[i]}. ${x}`).join('\n')}\nAnswer:`, answers })),
    maxPromptTokens: 1024,
  });
  const state = 'Ticket: I was charged twice this month and want one payment back.\n';
  const grouped = await local.scoreText(request(state, orders));
  const alone = [];
  for (const o of orders) alone.push(await local.scoreText(request(state, [o])));
  t.same(
    grouped.branches,
    alone.map((r) => r.branches[0]),
    'each branch scores as it does alone',
  );
  const framed = local.tokenizeRequest(request(state, orders));
  const whole = framed.suffixes.reduce((n, s) => n + s.length, 0);
  t.ok(
    grouped.evaluatedTokens < framed.prefix.length + whole,
    `the shared question head was decoded once (${grouped.evaluatedTokens} < ${framed.prefix.length + whole} tokens)`,
  );
  t.equal(grouped.promptTokens, framed.prefix.length + whole, 'charged as before: the prefix once plus every suffix');
});
