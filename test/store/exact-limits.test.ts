// Limits hold exactly when two nodes share the state: two store instances on one location (for
// PostgreSQL two pools, as two API nodes have) take 1,000 concurrent admissions against a limit of
// 100, and exactly 100 get through.
import t, { type Test } from 'tap';
import { openStore, type AdmitLimits, type Store } from '../../src/store/index.js';
import { DEFAULT_LEASE_MS as LEASE_MS } from '../../src/store/postgres/counters.js';
import { backendsFor } from '../helpers/backends.js';

const OPEN: AdmitLimits = { requestsPerSecond: 1_000_000, maxInFlight: 1_000_000, freeDailyDecisions: 0, monthlyCap: 0, billing: false, startingBalanceEur: 0 };

const backends = await backendsFor(t);

for (const backend of backends) {
  /** Two nodes on one fresh location, and a key created through the first. */
  const twoNodes = async (t: Test) => {
    const location = await backend.fresh();
    const nodes: [Store, Store] = [await openStore(location, backend.options), await openStore(location, backend.options)];
    t.teardown(() => Promise.all(nodes.map((s) => s.close())));
    const { record } = await nodes[0].keys.create('exact@example.com');
    return { nodes, key: record };
  };
  const admitMany = (nodes: Store[], key: { id: string; user_id: string }, limits: AdmitLimits) =>
    Promise.all(Array.from({ length: 1000 }, (_, i) => nodes[i % 2]!.counters.admit(key, limits)));

  t.test(`${backend.name}: a daily allowance of 100 over two nodes`, async (t) => {
    const { nodes, key } = await twoNodes(t);
    const results = await admitMany(nodes, key, { ...OPEN, freeDailyDecisions: 100 });
    t.equal(results.filter((r) => r.ok).length, 100, 'exactly 100 admitted');
    t.ok(
      results.every((r) => r.ok || r.reason === 'daily_quota'),
      'the rest refused by the allowance',
    );
    const month = new Date().toISOString().slice(0, 7);
    t.equal(await nodes[1].counters.userMonthRequests(key.user_id, month), 100, 'the month counts the admitted calls only');
    const [row] = await nodes[1].counters.usageRows([key.id]);
    t.match(row, { requests: 100, rate_limited: 900 });
  });

  t.test(`${backend.name}: 100 in-flight slots over two nodes, freed by release on the other node`, async (t) => {
    const { nodes, key } = await twoNodes(t);
    const results = await admitMany(nodes, key, { ...OPEN, maxInFlight: 100 });
    const held = results.filter((r) => r.ok);
    t.equal(held.length, 100, 'exactly 100 slots taken');
    t.equal(await nodes[0].counters.inFlight(key.id), 100);
    await Promise.all(held.map((r) => nodes[1].counters.release(key.id, r.slotId)));
    t.equal(await nodes[1].counters.inFlight(key.id), 0, 'every slot released through the other node');
    // An admission reads in its own write transaction, so it sees the releases at once; a plain read
    // through an LMDB handle may lag for a moment (lmdb-js renews its read snapshot on a timer).
    t.equal((await nodes[0].counters.admit(key, { ...OPEN, maxInFlight: 1 })).ok, true, 'and the first node admits again');
  });
}

const postgres = backends.find((b) => b.name === 'postgres');
t.test('postgres: the slots of a node that died lapse with its lease, not with a pid', { skip: !postgres && 'no PostgreSQL here' }, async (t) => {
  const backend = postgres!;
  const location = await backend.fresh();
  const dead = await openStore(location, backend.options);
  const live = await openStore(location, backend.options);
  t.teardown(() => live.close());
  const { record: key } = await live.keys.create('lease@example.com');
  const one = { ...OPEN, maxInFlight: 1 };
  const now = Date.now();
  t.equal((await dead.counters.admit(key, one, now)).ok, true, 'the dying node takes the only slot');
  await dead.close(); // it stops renewing its leases, as a killed node would
  t.match(await live.counters.admit(key, one, now + 1000), { ok: false, reason: 'in_flight' }, 'held while the lease runs');
  t.equal((await live.counters.admit(key, one, now + LEASE_MS + 1)).ok, true, 'free once the lease lapsed');
});
