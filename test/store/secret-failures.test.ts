// The failure counter behind the guessing throttle, the same contract on every backend: counted per
// scope in fixed windows, exact when two nodes count at once, and its ended windows cleared as it
// goes, so addresses that stopped guessing leave nothing behind.
import t from 'tap';
import pg from 'pg';
import { openEnv } from '../../src/store/env.js';
import { openStore, type Store } from '../../src/store/index.js';
import { backendsFor, type Backend } from '../helpers/backends.js';

const WINDOW_S = 300;
// A window boundary, so every clock below is exact arithmetic on either side of it.
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % (WINDOW_S * 1000));

/** How many windows the backend holds, ended or not. */
async function rowsOf(backend: Backend, location: string): Promise<number> {
  if (backend.name === 'lmdb') return openEnv(location).dbs.secret_failures.getKeysCount();
  const client = new pg.Client({ connectionString: location });
  await client.connect();
  try {
    return (await client.query<{ n: number }>('select count(*)::int as n from secret_failures')).rows[0]!.n;
  } finally {
    await client.end();
  }
}

for (const backend of await backendsFor(t)) {
  t.test(`${backend.name}: failures count per scope within a fixed window, a read counts nothing`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const end = T0 + WINDOW_S * 1000;
    t.same(await store.counters.secretFailures('api_key 203.0.113.9', WINDOW_S, T0), { count: 0, endsAt: end });
    for (let i = 1; i <= 3; i++) t.same(await store.counters.addSecretFailure('api_key 203.0.113.9', WINDOW_S, T0 + i), { count: i, endsAt: end });
    t.same(await store.counters.secretFailures('api_key 203.0.113.9', WINDOW_S, end - 1), { count: 3, endsAt: end }, 'reads do not count');
    t.same(await store.counters.secretFailures('api_key 203.0.113.9', WINDOW_S, end - 1), { count: 3, endsAt: end });
    t.equal((await store.counters.secretFailures('console 203.0.113.9', WINDOW_S, T0)).count, 0, 'another scope counts apart');
    t.equal((await store.counters.secretFailures('api_key 203.0.113.10', WINDOW_S, T0)).count, 0, 'another address too');
    t.same(
      await store.counters.secretFailures('api_key 203.0.113.9', WINDOW_S, end),
      { count: 0, endsAt: end + WINDOW_S * 1000 },
      'the next window starts at 0',
    );
    t.same(await store.counters.addSecretFailure('api_key 203.0.113.9', WINDOW_S, end), { count: 1, endsAt: end + WINDOW_S * 1000 });
  });

  t.test(`${backend.name}: 200 failures at once from two nodes are counted exactly`, async (t) => {
    const location = await backend.fresh();
    const nodes: Store[] = [await openStore(location, backend.options), await openStore(location, backend.options)];
    t.teardown(() => Promise.all(nodes.map((s) => s.close())));
    const now = Date.now();
    const counts = await Promise.all(Array.from({ length: 200 }, (_, i) => nodes[i % 2]!.counters.addSecretFailure('console 198.51.100.7', WINDOW_S, now)));
    t.same(
      counts.map((c) => c.count).sort((a, b) => a - b),
      Array.from({ length: 200 }, (_, i) => i + 1),
      'each failure got its own number: no two saw the same count',
    );
    t.equal((await nodes[1]!.counters.secretFailures('console 198.51.100.7', WINDOW_S, now)).count, 200);
  });

  t.test(`${backend.name}: ended windows are cleared by later failures, at most two each`, async (t) => {
    const location = await backend.fresh();
    const store = await openStore(location, backend.options);
    t.teardown(() => store.close());
    for (let i = 0; i < 6; i++) await store.counters.addSecretFailure(`api_key 192.0.2.${i}`, WINDOW_S, T0);
    t.equal(await rowsOf(backend, location), 6, 'six addresses failing in one window');
    const later = T0 + 2 * WINDOW_S * 1000;
    await store.counters.addSecretFailure('api_key 192.0.2.200', WINDOW_S, later);
    t.equal(await rowsOf(backend, location), 5, 'a failure in a later window took two ended ones with it');
    await store.counters.addSecretFailure('api_key 192.0.2.200', WINDOW_S, later);
    await store.counters.addSecretFailure('api_key 192.0.2.201', WINDOW_S, later);
    t.equal(await rowsOf(backend, location), 2, 'until only open windows are left');
    t.equal((await store.counters.secretFailures('api_key 192.0.2.200', WINDOW_S, later)).count, 2, 'the open window kept its count');
  });
}
