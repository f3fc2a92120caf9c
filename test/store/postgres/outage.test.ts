// The PostgreSQL store when the database goes away, on a real server: a server that is down refuses
// at once, one that hangs is given up on within the bounds of src/store/postgres/db.ts, a statement
// stuck on a lock is cancelled, and every such failure is a StoreUnavailableError (never a raw pg
// error, never an 'error' event that ends the process). The same store serves again once the server
// is back, with everything committed before the outage still there.
import t, { type Test } from 'tap';
import pg from 'pg';
import { openStore, StoreUnavailableError, type AdmitLimits, type Store } from '../../../src/store/index.js';
import { CONNECT_TIMEOUT_MS, LOCK_TIMEOUT_MS, POOL_WAIT_MS, QUERY_TIMEOUT_MS, lockKey } from '../../../src/store/postgres/db.js';
import { isOutage } from '../../../src/store/postgres/outage.js';
import { TEST_KEY_SECRET } from '../../helpers/backends.js';
import { postgresFor } from '../../helpers/postgres.js';

const LIMITS: AdmitLimits = { requestsPerSecond: 1000, maxInFlight: 10, freeDailyDecisions: 0, monthlyCap: 0, billing: false, startingBalanceEur: 0 };

/** How long the promise took to settle, and how: the error when it rejected. */
async function settle(p: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const start = Date.now();
  try {
    await p;
    return { ms: Date.now() - start, error: null };
  } catch (error) {
    return { ms: Date.now() - start, error };
  }
}

const server = await postgresFor(t);

if (server) {
  const open = async (t: Test, logs: string[] = []): Promise<Store> => {
    const store = await openStore(await server.freshDatabase(), { keySecret: TEST_KEY_SECRET, poolSize: 3, log: (l) => logs.push(l) });
    t.teardown(() => store.close());
    return store;
  };

  t.test('the database down: every call is a prompt StoreUnavailableError; back up, the same store serves what was committed', async (t) => {
    const logs: string[] = [];
    const store = await open(t, logs);
    const { record, secret } = await store.keys.create('down@example.com');
    const key = { id: record.id, user_id: record.user_id };
    const admitted = await store.counters.admit(key, LIMITS);
    t.ok(admitted.ok);
    await store.idempotency.save(key.id, 'before', 'hash', 200, Buffer.from('{"id":"so_before"}'));

    await server.down();
    t.teardown(() => server.up());
    const calls: [string, ReturnType<typeof settle>][] = [
      ['keys.verify', settle(store.keys.verify(secret))],
      ['keys.create', settle(store.keys.create('new@example.com'))],
      ['counters.admit', settle(store.counters.admit(key, LIMITS))],
      ['idempotency.lookup', settle(store.idempotency.lookup(key.id, 'before', 'hash'))],
      ['idempotency.save', settle(store.idempotency.save(key.id, 'during', 'hash', 200, Buffer.from('{}')))],
      ['users.sync', settle(store.users.sync('down@example.com'))],
      ['waitlist.add', settle(store.waitlist.add({ email: 'w@example.com', company: null, use_case: 'x', consent: true }))],
      ['ping', settle(store.ping())],
      ['purgeExpired', settle(store.purgeExpired())],
    ];
    for (const [name, call] of calls) {
      const { ms, error } = await call;
      t.type(error, StoreUnavailableError, `${name}: StoreUnavailableError`);
      t.ok(ms < 1000, `${name}: refused at once (${ms} ms)`);
    }
    // The slot's answer is ready: releasing it in an outage is not an error (its lease lapses).
    if (admitted.ok) t.equal((await settle(store.counters.release(key.id, admitted.slotId))).error, null, 'release resolves');

    await server.up();
    t.equal((await store.keys.verify(secret))?.id, record.id, 'the key committed before the outage verifies');
    const hit = await store.idempotency.lookup(key.id, 'before', 'hash');
    t.equal(hit.status === 'hit' && hit.response.toString(), '{"id":"so_before"}', 'the idempotent answer saved before is there');
    t.same(await store.idempotency.lookup(key.id, 'during', 'hash'), { status: 'miss' }, 'nothing refused during the outage was written');
    t.ok((await store.counters.admit(key, LIMITS)).ok, 'admissions work again');
    await t.resolves(store.ping(), 'ping answers');
  });

  t.test('a transaction in progress when the server shuts down fails as StoreUnavailableError, and the process lives', async (t) => {
    const url = await server.freshDatabase();
    const store = await openStore(url, { keySecret: TEST_KEY_SECRET, poolSize: 3, log: () => {} });
    t.teardown(() => store.close());
    const { record } = await store.keys.create('busy@example.com');
    // Another session holds the user's admission lock, so the admission waits inside its transaction
    // on a client checked out of the pool, where a lost connection used to raise an unhandled
    // 'error' and end the process.
    const other = new pg.Client({ connectionString: url });
    other.on('error', () => {});
    await other.connect();
    await other.query('begin');
    await other.query('select pg_advisory_xact_lock($1)', [lockKey(`user:${record.user_id}`).toString()]);
    const waiting = settle(store.counters.admit({ id: record.id, user_id: record.user_id }, LIMITS));
    await new Promise((r) => setTimeout(r, 300));
    await server.down();
    t.teardown(() => server.up());
    const { error } = await waiting;
    t.type(error, StoreUnavailableError, 'the waiting admission fails as an outage');
    await other.end().catch(() => {});
    await server.up();
    t.ok((await store.counters.admit({ id: record.id, user_id: record.user_id }, LIMITS)).ok, 'and the store serves again');
  });

  t.test('a server that hangs: calls fail within the connect and answer bounds, then serve again when it resumes', async (t) => {
    const store = await open(t);
    const { record, secret } = await store.keys.create('frozen@example.com');
    server.freeze();
    t.teardown(() => server.thaw());
    const bound = Math.max(CONNECT_TIMEOUT_MS, QUERY_TIMEOUT_MS) + 1500;
    // As many calls as the pool has connections: each is given up on within one connect or answer.
    const first = [
      settle(store.keys.verify(secret)),
      settle(store.counters.admit({ id: record.id, user_id: record.user_id }, LIMITS)),
      settle(store.keys.get(record.id)),
    ];
    // More, queued for a connection: their wait for one is bounded too.
    const queued = Array.from({ length: 4 }, () => settle(store.keys.get(record.id)));
    for (const [i, { ms, error }] of (await Promise.all(first)).entries()) {
      t.type(error, StoreUnavailableError, `call ${i}: StoreUnavailableError`);
      t.ok(ms < bound, `call ${i}: given up after ${ms} ms, under ${bound} ms`);
    }
    for (const [i, { ms, error }] of (await Promise.all(queued)).entries()) {
      t.type(error, StoreUnavailableError, `queued call ${i}: StoreUnavailableError`);
      t.ok(ms < POOL_WAIT_MS + 1500, `queued call ${i}: given up after ${ms} ms, under ${POOL_WAIT_MS + 1500} ms`);
    }
    server.thaw();
    t.equal((await store.keys.verify(secret))?.id, record.id, 'serves again, without reopening the store');
  });

  t.test('a statement stuck on a lock is cancelled by lock_timeout; the limit is untouched', async (t) => {
    const url = await server.freshDatabase();
    const store = await openStore(url, { keySecret: TEST_KEY_SECRET, log: () => {} });
    t.teardown(() => store.close());
    const { record } = await store.keys.create('locked@example.com');
    const key = { id: record.id, user_id: record.user_id };
    // A node frozen mid-admission holds the user's lock.
    const stuck = new pg.Client({ connectionString: url });
    await stuck.connect();
    t.teardown(() => stuck.end());
    await stuck.query('begin');
    await stuck.query('select pg_advisory_xact_lock($1)', [lockKey(`user:${record.user_id}`).toString()]);
    const { ms, error } = await settle(store.counters.admit(key, LIMITS));
    t.type(error, StoreUnavailableError);
    t.match((error as Error).message, /lock timeout/);
    t.ok(ms >= LOCK_TIMEOUT_MS - 100 && ms < LOCK_TIMEOUT_MS + 1500, `cancelled after ${ms} ms`);
    await stuck.query('rollback');
    t.equal(await store.counters.inFlight(key.id), 0, 'the refused admission took no slot');
    t.ok((await store.counters.admit(key, LIMITS)).ok, 'admitted once the lock is free');
  });

  t.test('which errors are outages', async (t) => {
    const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    t.ok(isOutage(coded('ECONNREFUSED')), 'connection refused');
    t.ok(isOutage(coded('57P01')), 'admin shutdown');
    t.ok(isOutage(coded('08006')), 'connection failure');
    t.ok(isOutage(coded('53300')), 'too many connections');
    t.ok(isOutage(coded('57014')), 'statement timeout');
    t.ok(isOutage(coded('55P03')), 'lock timeout');
    t.ok(isOutage(new Error('Connection terminated unexpectedly')));
    t.ok(isOutage(new Error('Query read timeout')));
    t.ok(isOutage(new Error('timeout exceeded when trying to connect')));
    t.ok(isOutage(new Error('timeout expired')), "a connect past the client's own bound");
    t.notOk(isOutage(coded('23505')), 'a unique violation is a bug, not an outage');
    t.notOk(isOutage(coded('42P01')), 'a missing table is a bug');
    t.notOk(isOutage(new TypeError('x is undefined')));
  });
}
