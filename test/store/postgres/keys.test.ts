// API keys in PostgreSQL: a burst of requests with one key does not write its row per request.
import t from 'tap';
import pg from 'pg';
import { openStore } from '../../../src/store/index.js';
import { TEST_KEY_SECRET } from '../../helpers/backends.js';
import { postgresFor } from '../../helpers/postgres.js';

const server = await postgresFor(t);

if (server) {
  t.test('last_used_at is written at most once a second; every verify reports its own time', async (t) => {
    const url = await server.freshDatabase();
    const store = await openStore(url, { keySecret: TEST_KEY_SECRET });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    t.teardown(() => Promise.all([store.close(), client.end()]));
    const { record, secret } = await store.keys.create('busy@example.com');
    const stored = async () =>
      (await client.query<{ at: Date }>('select last_used_at as at from api_keys where id = $1', [record.id])).rows[0]!.at.toISOString();

    const first = await store.keys.verify(secret);
    const written = await stored();
    t.equal(written, first?.last_used_at, 'the first use is written');
    const burst = await Promise.all(Array.from({ length: 20 }, () => store.keys.verify(secret)));
    t.ok(
      burst.every((k) => k?.id === record.id && k.last_used_at! >= written),
      'each verify reports its own time',
    );
    const now = await stored();
    // On a loaded machine the burst may outlast the second; either way the row moved only once a
    // second had passed.
    if (Date.now() - Date.parse(written) < 1000) t.equal(now, written, 'the burst within the second did not write the row again');
    else t.ok(now === written || Date.parse(now) - Date.parse(written) >= 1000, 'rewritten only after a second');

    await new Promise((r) => setTimeout(r, 1100));
    const later = await store.keys.verify(secret);
    t.equal(await stored(), later?.last_used_at, 'a use a second later is written');
  });
}
