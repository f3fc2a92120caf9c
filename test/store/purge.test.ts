import t from 'tap';
import { openStore } from '../../src/store/index.js';
import { startPurgeScheduler } from '../../src/workers/purge.js';
import { backendsFor } from '../helpers/backends.js';

for (const backend of await backendsFor(t)) {
  t.test(backend.name, async (t) => {
    t.test('the piscina purge removes an expired retained record and keeps a live one', async (t) => {
      const dir = await backend.fresh();
      const store = await openStore(dir, { ...backend.options, idempotencyTtlSeconds: 3600 });
      t.teardown(() => store.close());
      const now = Date.now();
      const rec = (id: string, until: number) => ({
        id,
        key_id: 'key_1',
        request: { state: 's' },
        response: { id },
        created_at: new Date(now - 1000).toISOString(),
        retention_until: new Date(until).toISOString(),
      });
      await store.retention.put(rec('expired', now - 1));
      await store.retention.put(rec('live', now + 30 * 86400e3));
      await store.idempotency.save('key_1', 'idem', 'h', 200, Buffer.from('{}'));
      const user = await store.users.sync('purge@x.io');
      const live = await store.verificationTokens.issue(user, 'email', 3600);

      const scheduler = startPurgeScheduler(dir, 3_600_000, { storeOptions: { ...backend.options, idempotencyTtlSeconds: 3600 } });
      t.teardown(() => scheduler.stop());

      const result = await scheduler.runNow(now + 10);
      t.same(result, { retained: 1, idempotency: 0, verificationTokens: 0, traces: 0, addressWindows: 0 });
      t.equal(await store.retention.get('key_1', 'expired'), null, 'expired record purged');
      t.ok(await store.retention.get('key_1', 'live'), 'live record untouched');
      t.equal((await store.idempotency.lookup('key_1', 'idem', 'h')).status, 'hit', 'live idempotency entry untouched');

      const later = await scheduler.runNow(now + 2 * 3600e3);
      t.same(later, { retained: 0, idempotency: 1, verificationTokens: 1, traces: 0, addressWindows: 0 });
      t.equal((await store.idempotency.lookup('key_1', 'idem', 'h')).status, 'miss');
      t.same(await store.verificationTokens.use(live.token, 'purge@x.io'), { status: 'not_found' });
      t.ok(await store.retention.get('key_1', 'live'), 'still within retention_until');
    });

    t.test('the scheduler runs on its own', async (t) => {
      const dir = await backend.fresh();
      const store = await openStore(dir, backend.options);
      t.teardown(() => store.close());
      await store.retention.put({
        id: 'gone-soon',
        key_id: 'k',
        request: null,
        response: null,
        created_at: new Date().toISOString(),
        retention_until: new Date(Date.now() + 200).toISOString(),
      });
      const lines: string[] = [];
      const scheduler = startPurgeScheduler(dir, 300, { storeOptions: backend.options, log: (l) => lines.push(l) });
      t.teardown(() => scheduler.stop());
      // The first run waits for a worker thread to start and load the store, which a loaded
      // 2-core machine has taken more than 5 s to do; the loop ends as soon as the record is gone
      // and the run's line is logged, which comes after: the worker's delete is committed before
      // its result reaches this thread.
      const deadline = Date.now() + 30_000;
      while (((await store.retention.get('k', 'gone-soon')) || lines.length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      t.equal(await store.retention.get('k', 'gone-soon'), null, 'purged by a scheduled run');
      t.match(lines.join('\n'), /removed 1 retained/);
    });
  });
}
