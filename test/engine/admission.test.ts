// Admission by cost, as pure arithmetic: what work costs alone, how many branches fit a budget, and
// how the ledger shares engine time out and refuses what cannot finish.
import t from 'tap';
import { branchChunks, branchesThatFit, shareOut, workMs, WorkLedger, type DecodeCost } from '../../src/engine/admission.js';

const cost: DecodeCost = { perDecodeMs: 50, perTokenMs: 5, perRowMs: 1 };
const plan = { prefixChunk: 512, stepTargetMs: 250, maxStepMs: 1000 };

t.test('work alone: the prefix in chunks, then branches packed to the step target', async (t) => {
  // 200 prefix tokens: one decode carrying the first branch; 40-token branches cost 201 ms, one a decode.
  const one = workMs(cost, { prefixTokens: 200, suffixTokens: [40] }, plan);
  t.equal(one, 50 + 5 * 240 + 1);
  const four = workMs(cost, { prefixTokens: 200, suffixTokens: [40, 40, 40, 40] }, plan);
  t.equal(four, 50 * 4 + 5 * (200 + 160) + 4);
  // Short branches share decodes: 10-token branches cost 51 ms, three to a decode, since 50 ms of the
  // 250 ms step target is the decode's own (the scorer packs them so).
  const short = workMs(cost, { prefixTokens: 600, suffixTokens: Array(9).fill(10) }, plan);
  t.equal(short, 50 * (2 + 3) + 5 * (600 + 90) + 9, 'two prefix chunks, eight more branches in three decodes');
});

t.test('a branch longer than twice the step target takes is cut into chunks, each a decode of its own', async (t) => {
  // 2 × 250 ms less the decode's own 51 ms leaves 449 ms: 89 tokens at 5 ms a token.
  t.equal(branchChunks(cost, 89, plan), 1);
  t.equal(branchChunks(cost, 90, plan), 2);
  t.equal(branchChunks(cost, 300, plan), 4);
  // Never cut below the scorer's 32 tokens, however slow a token is.
  t.equal(branchChunks({ perDecodeMs: 50, perTokenMs: 100, perRowMs: 1 }, 64, plan), 2);
  // Three 120-token branches: two chunks each, none riding behind the prefix.
  const chunked = workMs(cost, { prefixTokens: 200, suffixTokens: [120, 120, 120] }, plan);
  t.equal(chunked, 50 * (1 + 3 * 2) + 5 * (200 + 360) + 3);
});

t.test('branches that fit a budget: the most whose work stays within it', async (t) => {
  const work = { prefixTokens: 200, suffixTokens: Array(100).fill(40) };
  const fit = branchesThatFit(cost, work, plan, 10_000);
  t.ok(workMs(cost, { prefixTokens: 200, suffixTokens: Array(fit).fill(40) }, plan) <= 10_000, `${fit} fit`);
  t.ok(workMs(cost, { prefixTokens: 200, suffixTokens: Array(fit + 1).fill(40) }, plan) > 10_000, 'one more does not');
  t.equal(branchesThatFit(cost, work, plan, 1e9), 100, 'all of them in a large budget');
  t.equal(branchesThatFit(cost, work, plan, 10), 0, 'none when not even the prefix fits');
});

t.test('the ledger refuses work that cannot finish alone, and work that cannot finish behind the queue', async (t) => {
  let busy = 0;
  const ledger = new WorkLedger(() => busy);
  t.match(ledger.admit('a', 5_000, 4_000), { admit: false, reason: 'too_costly', workMs: 5_000 });
  const big = ledger.admit('a', 100_000, 600_000);
  t.ok(big.admit, 'a large job that fits its deadline');
  // A small job of another tenant shares turns with the large one: it finishes in about twice its own time.
  t.match(ledger.admit('b', 2_000, 3_000), { admit: false, reason: 'busy', finishMs: 4_000, waitMs: 1_000 });
  const small = ledger.admit('b', 2_000, 5_000);
  t.ok(small.admit, 'with room for its turns it is admitted');
  t.equal(ledger.pendingMs(), 102_000);
  // 3 s of engine time: 1.5 s to each tenant.
  busy = 3_000;
  t.equal(ledger.pendingMs(), 99_000);
  // 2 s more: b's last 0.5 s runs out and hands the rest of its turn to a.
  busy = 5_000;
  t.equal(ledger.pendingMs(), 97_000);
  if (small.admit) ledger.done(small.ticket);
  if (big.admit) ledger.done(big.ticket);
  t.equal(ledger.pendingMs(), 0, 'nothing in hand once both are done');
  t.match(ledger.admit('b', 2_000, 3_000), { admit: true }, 'an idle engine admits what fits alone');
});

t.test('while the engine holds work, a newcomer first waits for the decode in progress', async (t) => {
  const ledger = new WorkLedger(() => 0);
  t.match(ledger.admit('a', 1_000, 1_500, 1_000), { admit: true }, 'an idle engine: no decode to wait for');
  t.match(ledger.admit('b', 1_000, 2_500, 1_000), { admit: false, reason: 'busy', finishMs: 3_000 }, 'its turn, a turn of the work in hand, one max step');
});

t.test("a tenant's own work in hand delays its new work as another tenant's does", async (t) => {
  const ledger = new WorkLedger(() => 0);
  ledger.admit('a', 10_000, Infinity);
  t.match(ledger.admit('a', 1_000, 1_500), { admit: false, reason: 'busy', finishMs: 2_000 });
  t.match(ledger.admit('a', 1_000, Infinity), { admit: true }, 'no deadline: always admitted');
});

t.test('time is shared out in equal turns, a holding that runs out handing its turn on', async (t) => {
  t.same(shareOut([100_000, 2_000], 3_000), [1_500, 1_500]);
  t.same(shareOut([100_000, 500], 2_000), [1_500, 500]);
  t.same(shareOut([1, 2, 3], 100), [1, 2, 3], 'more than all of it: all of it');
  t.same(shareOut([4, 4], -1), [0, 0], 'no time spent: nothing taken');
  t.same(shareOut([], 5), []);
});

t.test('a remainder far below a millisecond is settled like any other, not spun on', async (t) => {
  // Rounds that stopped at a tolerance of 1e-9 ms kept a remainder of 1e-10 ms forever, and the
  // engine's thread looped in them: the ledger must return, with the remainder used up.
  let busy = 0;
  const ledger = new WorkLedger(() => busy);
  ledger.admit('a', 1e-10, Infinity);
  ledger.admit('b', 0.3 - 0.1 - 0.2 + 5, Infinity);
  busy = 1_000;
  t.equal(ledger.pendingMs(), 0);
});

t.test('the work in hand falls by the time spent, whatever the shapes and slices', async (t) => {
  // Seeded so a failure replays: many tenants' uneven work, settled in uneven slices of engine time.
  let seed = 7;
  const random = (): number => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
  let busy = 0;
  const ledger = new WorkLedger(() => busy);
  const tickets: number[] = [];
  let worst = 0;
  for (let i = 0; i < 2_000; i++) {
    const verdict = ledger.admit(`t${i % 5}`, random() * 300, Infinity);
    if (verdict.admit) tickets.push(verdict.ticket);
    if (random() < 0.3) ledger.done(tickets.splice(Math.floor(random() * tickets.length), 1)[0]!);
    const before = ledger.pendingMs();
    const slice = random() * 80;
    busy += slice;
    const after = ledger.pendingMs();
    worst = Math.max(worst, Math.abs(before - after - Math.min(slice, before)));
  }
  t.ok(worst < 1e-6, `every slice is taken off exactly (worst error ${worst} ms)`);
});
