// A store written before traces had a quota and an expiry, and before idempotency entries were capped
// per key, opened by this version: its traces are counted against their key's quota and lapse with
// their decision (or after the grace period when it is gone), and its idempotency entries are
// counted per key and in all, on both backends (LMDB's upgrade at open, PostgreSQL's migration 2).
import t from 'tap';
import pg from 'pg';
import { openEnv } from '../../src/store/env.js';
import { openStore, type Store } from '../../src/store/index.js';
import { loadMigrations, migrate } from '../../src/store/postgres/migrate.js';
import { backendsFor } from '../helpers/backends.js';

const DAY = 86_400_000;
const now = Date.now();
const until = new Date(now + DAY).toISOString();
const oldTrace = (request_id: string) => ({
  key_id: 'k',
  request_id,
  question: '',
  outcome: 'A',
  observed_at: null,
  metadata: null,
  received_at: new Date(now).toISOString(),
});
const retained = { id: 'kept', key_id: 'k', request: {}, response: {}, created_at: new Date(now).toISOString(), retention_until: until };

/** Writes the old version's records straight into the backend, as that version would have. */
async function writeOldStore(backend: string, location: string): Promise<void> {
  if (backend === 'lmdb') {
    const env = openEnv(location);
    env.root.transactionSync(() => {
      env.dbs.retention.putSync(['k', 'kept'], retained);
      env.dbs.retention_expiry.putSync([Date.parse(until), 'k', 'kept'], true);
      for (const id of ['kept', 'orphan']) env.dbs.traces.putSync(['k', id, ''], oldTrace(id));
      for (const [i, idem] of ['a', 'b', 'c'].entries()) {
        const created_ms = now - 1000 + i;
        env.dbs.idempotency.putSync(['k', idem], { body_hash: 'h', status: 200, response: Buffer.from(idem), created_ms });
        env.dbs.idempotency_order.putSync([created_ms, 'k', idem], true);
      }
      env.dbs.meta.putSync('idempotency_count', 3);
    });
    await env.flushed();
    await env.root.close();
    return;
  }
  const pool = new pg.Pool({ connectionString: location, max: 1 });
  try {
    await migrate(pool, loadMigrations().slice(0, 1));
    await pool.query('insert into retained_requests (key_id, id, record, retention_until) values ($1, $2, $3, $4)', [
      'k',
      'kept',
      JSON.stringify(retained),
      until,
    ]);
    for (const id of ['kept', 'orphan']) {
      await pool.query('insert into traces (key_id, request_id, question, record) values ($1, $2, $3, $4)', ['k', id, '', JSON.stringify(oldTrace(id))]);
    }
    for (const [i, idem] of ['a', 'b', 'c'].entries()) {
      await pool.query('insert into idempotency (key_id, idempotency_key, body_hash, status, response, created_at) values ($1, $2, $3, $4, $5, $6)', [
        'k',
        idem,
        'h',
        200,
        Buffer.from(idem),
        new Date(now - 1000 + i),
      ]);
    }
  } finally {
    await pool.end();
  }
}

for (const backend of await backendsFor(t)) {
  t.test(`${backend.name}: an older store's traces and idempotency entries are brought under the bounds`, async (t) => {
    const location = await backend.fresh();
    await writeOldStore(backend.name, location);
    const open = () => openStore(location, { ...backend.options, idempotencyMax: 3 });
    let store: Store = await open();
    t.teardown(() => store.close());

    const traces = await store.traces.list('k');
    t.same(
      traces.map((r) => r.request_id),
      ['kept', 'orphan'],
      'the old traces are kept',
    );
    t.equal(traces[0]!.expires_at, until, 'a trace of a retained decision lapses with it');
    const graceMs = Date.parse(traces[1]!.expires_at) - now;
    t.ok(graceMs > 29 * DAY && graceMs < 31 * DAY, 'an orphan gets the default retention period from the upgrade');

    const quota = { traces: 3, bytes: 1_000_000 };
    const fresh = (request_id: string) => ({ ...oldTrace(request_id), expires_at: until });
    t.same(await store.traces.putMany('k', [fresh('new')], quota), { ok: true });
    t.equal((await store.traces.putMany('k', [fresh('newer')], quota)).ok, false, 'the old traces count against the quota');

    await store.close();
    store = await open();
    t.equal((await store.traces.list('k')).length, 3, 'a second open upgrades nothing twice');
    t.equal((await store.traces.putMany('k', [fresh('newer')], quota)).ok, false, 'nor counts them twice');

    await store.idempotency.save('k', 'd', 'h', 200, Buffer.from('d'));
    t.same(
      await Promise.all(['a', 'b', 'c', 'd'].map(async (idem) => (await store.idempotency.lookup('k', idem, 'h')).status)),
      ['miss', 'hit', 'hit', 'hit'],
      "the old entries count against their key's cap, the oldest evicted",
    );

    const purged = await store.purgeExpired(now + 2 * DAY);
    t.equal(purged.traces, 2, 'the purge removes the traces whose decision lapsed');
    t.same(
      (await store.traces.list('k')).map((r) => r.request_id),
      ['orphan'],
    );
  });
}
