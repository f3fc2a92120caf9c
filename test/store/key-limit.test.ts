// The bound on active API keys per user: exact under concurrent creates, per user, freed by a
// revoke, and configured by --max-keys-per-user / ARBITRA_MAX_KEYS_PER_USER.
import t from 'tap';
import { ConfigError, loadConfig, storeOptions } from '../../src/config.js';
import { DEFAULT_MAX_KEYS_PER_USER, KeyLimitError, openStore } from '../../src/store/index.js';
import { backendsFor } from '../helpers/backends.js';

for (const backend of await backendsFor(t)) {
  t.test(`${backend.name}: concurrent creates never pass the limit`, async (t) => {
    const store = await openStore(await backend.fresh(), { ...backend.options, maxKeysPerUser: 5 });
    t.teardown(() => store.close());
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.keys.create('busy@example.com', `k${i}`)));
    t.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
      t.type(r.reason, KeyLimitError);
      t.equal(r.reason.limit, 5);
    }
    t.equal((await store.keys.list('busy@example.com')).length, 5, 'refused creates leave nothing behind');
    t.ok(await store.keys.create('other@example.com'), 'the limit is per user');

    const [first] = await store.keys.list('busy@example.com');
    await store.keys.revoke(first!.id, 'busy@example.com');
    t.ok(await store.keys.create('busy@example.com'), 'a revoked key frees its place');
    await t.rejects(store.keys.create('busy@example.com'), KeyLimitError);
  });

  t.test(`${backend.name}: the default is ${DEFAULT_MAX_KEYS_PER_USER}`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    await Promise.all(Array.from({ length: DEFAULT_MAX_KEYS_PER_USER }, () => store.keys.create('many@example.com')));
    await t.rejects(store.keys.create('many@example.com'), { name: 'KeyLimitError', limit: DEFAULT_MAX_KEYS_PER_USER });
  });
}

t.test('configured by flag or variable', async (t) => {
  const base = ['--data-dir', t.testdir()];
  t.equal(storeOptions(loadConfig(base, {})).maxKeysPerUser, DEFAULT_MAX_KEYS_PER_USER);
  t.equal(storeOptions(loadConfig(base, { ARBITRA_MAX_KEYS_PER_USER: '7' })).maxKeysPerUser, 7);
  t.equal(loadConfig([...base, '--max-keys-per-user', '9'], { ARBITRA_MAX_KEYS_PER_USER: '7' }).maxKeysPerUser, 9, 'the flag wins');
  for (const bad of ['0', '-1', 'many', '1.5']) {
    t.throws(() => loadConfig(base, { ARBITRA_MAX_KEYS_PER_USER: bad }), ConfigError, `refuses ${bad}`);
  }
});
