// timedStore: every store call is reported with its operation and duration, failures too, and the
// wrapped store answers exactly what the backend answers (on LMDB; the wrapper knows no backend).
import t from 'tap';
import { openStore } from '../../src/store/index.js';
import { timedStore } from '../../src/store/timed.js';

t.test('calls pass through unchanged and each is observed once, by module.method', async (t) => {
  const inner = await openStore(t.testdir());
  t.teardown(() => inner.close());
  const seen: [string, number][] = [];
  const store = timedStore(inner, (op, s) => seen.push([op, s]));
  t.equal(store.location, inner.location);

  const { record, secret } = await store.keys.create('timed@example.com');
  const verified = await store.keys.verify(secret);
  t.equal(verified?.id, record.id, 'the wrapped call answers what the backend does');
  const limits = { requestsPerSecond: 10, maxInFlight: 1, freeDailyDecisions: 0, monthlyCap: 0, billing: false, startingBalanceEur: 0 };
  const first = await store.counters.admit(record, limits);
  t.equal(first.ok, true);
  t.same(await store.counters.admit(record, limits), { ok: false, reason: 'in_flight', retryAfterSeconds: 1 }, "state is the backend's own");
  const down = timedStore({ ...inner, keys: { ...inner.keys, create: async () => Promise.reject(new Error('the database went away')) } }, (op, s) =>
    seen.push([op, s]),
  );
  await t.rejects(down.keys.create('timed@example.com'), /the database went away/, 'a failing call still fails');

  t.same(
    seen.map(([op]) => op),
    ['keys.create', 'keys.verify', 'counters.admit', 'counters.admit', 'keys.create'],
    'one observation per call, in order, the failed one included',
  );
  t.ok(
    seen.every(([, s]) => s >= 0 && s < 10),
    'durations in seconds',
  );
});

t.test('what returns no promise passes through untimed', async (t) => {
  const inner = await openStore(t.testdir());
  t.teardown(() => inner.close());
  const seen: string[] = [];
  const store = timedStore(inner, (op) => seen.push(op));
  const traces = [];
  for await (const trace of store.traces.all()) traces.push(trace);
  t.same(traces, []);
  t.equal(store.retention.pseudonym('key_1'), inner.retention.pseudonym('key_1'));
  t.same(seen, [], 'an iterator and a plain value are not timed');
});
