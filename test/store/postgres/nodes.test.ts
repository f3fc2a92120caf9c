// Two nodes on one PostgreSQL database, each with its own store and pool: what one commits, the
// other acts on at its very next call; the purge runs on one of them at a time; and a node that does
// not match the others (another secret, an older schema) is refused at start with a clear error.
import t, { type Test } from 'tap';
import pg from 'pg';
import { openStore, type Store } from '../../../src/store/index.js';
import { lockKey } from '../../../src/store/postgres/db.js';
import { TEST_KEY_SECRET } from '../../helpers/backends.js';
import { postgresFor } from '../../helpers/postgres.js';

const server = await postgresFor(t);

if (server) {
  const twoNodes = async (t: Test): Promise<[Store, Store, string]> => {
    const url = await server.freshDatabase();
    const a = await openStore(url, { keySecret: TEST_KEY_SECRET });
    const b = await openStore(url, { keySecret: TEST_KEY_SECRET });
    t.teardown(() => Promise.all([a.close(), b.close()]));
    return [a, b, url];
  };

  t.test('a key created on one node works on the other; a revoke on either is refused by both at once', async (t) => {
    const [a, b] = await twoNodes(t);
    const { record, secret } = await a.keys.create('two@example.com');
    t.equal((await b.keys.verify(secret))?.id, record.id);
    t.equal((await b.keys.list('two@example.com')).length, 1);
    t.ok((await b.keys.revoke(record.id, 'two@example.com'))?.revoked_at);
    t.equal(await a.keys.verify(secret), null, 'the node that created it refuses it on the next call');
    t.equal(await b.keys.verify(secret), null);
  });

  t.test('idempotency: replay and 409 from the other node', async (t) => {
    const [a, b] = await twoNodes(t);
    await a.idempotency.save('key_1', 'idem', 'hash-1', 200, Buffer.from('{"id":"r1"}'));
    const hit = await b.idempotency.lookup('key_1', 'idem', 'hash-1');
    t.equal(hit.status === 'hit' && hit.response.toString(), '{"id":"r1"}');
    t.same(await b.idempotency.lookup('key_1', 'idem', 'hash-2'), { status: 'conflict' });
  });

  t.test('a retained request deleted from the other node is gone for both; pseudonyms agree', async (t) => {
    const [a, b] = await twoNodes(t);
    const now = Date.now();
    await a.retention.put({
      id: 'r1',
      key_id: 'k',
      request: { q: 1 },
      response: { a: 1 },
      created_at: new Date(now).toISOString(),
      retention_until: new Date(now + 86400e3).toISOString(),
    });
    t.equal(await b.retention.delete('k', 'r1'), true);
    t.equal(await a.retention.get('k', 'r1'), null);
    t.equal(a.retention.pseudonym('k'), b.retention.pseudonym('k'), 'the same secret gives the same pseudonym on every node');
  });

  t.test('the purge runs on one node at a time', async (t) => {
    const [a, b, url] = await twoNodes(t);
    const now = Date.now();
    const expired = (id: string) => ({
      id,
      key_id: 'k',
      request: null,
      response: null,
      created_at: new Date(now - 2000).toISOString(),
      retention_until: new Date(now - 1000).toISOString(),
    });
    for (let i = 0; i < 5; i++) await a.retention.put(expired(`r${i}`));
    // Another node in the middle of its purge holds the lock.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    t.teardown(() => other.end());
    await other.query('select pg_advisory_lock($1)', [lockKey('purge').toString()]);
    t.same(await b.purgeExpired(now), { retained: 0, idempotency: 0, verificationTokens: 0, traces: 0, addressWindows: 0 }, 'left to the node purging');
    t.ok(await a.retention.get('k', 'r0'), 'nothing removed meanwhile');
    await other.query('select pg_advisory_unlock($1)', [lockKey('purge').toString()]);
    t.equal((await b.purgeExpired(now)).retained, 5, 'purged once the lock is free');
  });

  t.test('a node with another secret is refused at start', async (t) => {
    const [, , url] = await twoNodes(t);
    await t.rejects(
      openStore(url, { keySecret: `${TEST_KEY_SECRET}-other` }),
      /ARBITRA_KEY_SECRET differs from the secret the other nodes on this database use/,
    );
    await t.rejects(openStore(url, {}), /a PostgreSQL store needs ARBITRA_KEY_SECRET/);
  });

  t.test('a node older than the database schema is refused at start', async (t) => {
    const [, , url] = await twoNodes(t);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    t.teardown(() => client.end());
    await client.query("insert into schema_migrations (version, name, checksum) values (9999, 'from_the_future', '')");
    await t.rejects(openStore(url, { keySecret: TEST_KEY_SECRET }), {
      name: 'SchemaError',
      message: /schema is at version 9999 \(from_the_future\), newer than this arbitra knows/,
    });
  });

  t.test('a store keeps at most poolSize connections, however many calls wait', async (t) => {
    const url = await server.freshDatabase();
    const store = await openStore(url, { keySecret: TEST_KEY_SECRET, poolSize: 3 });
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    t.teardown(() => Promise.all([store.close(), watcher.end()]));
    const { record } = await store.keys.create('pool@example.com');
    const limits = { requestsPerSecond: 1e6, maxInFlight: 1e6, freeDailyDecisions: 0, monthlyCap: 0, billing: false, startingBalanceEur: 0 };
    let most = 0;
    const burst = Promise.all(Array.from({ length: 200 }, () => store.counters.admit(record, limits)));
    let done = false;
    void burst.finally(() => (done = true));
    while (!done) {
      const { rows } = await watcher.query<{ n: number }>(
        'select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      most = Math.max(most, rows[0]!.n);
    }
    t.equal((await burst).filter((r) => r.ok).length, 200);
    t.ok(most >= 1 && most <= 3, `at most 3 connections seen (${most})`);
  });

  t.test('the location of a PostgreSQL store never shows its password', async (t) => {
    const url = new URL(await server.freshDatabase());
    url.password = 'hunter2'; // the test server trusts loopback, so any password connects
    const store = await openStore(url.toString(), { keySecret: TEST_KEY_SECRET });
    t.teardown(() => store.close());
    t.notMatch(store.location, 'hunter2');
    t.match(store.location, url.pathname, 'it still names the database');
  });
}
