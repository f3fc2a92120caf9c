// `--store` / ARBITRA_STORE_URL and ARBITRA_KEY_SECRET in the configuration: a PostgreSQL URL or
// the LMDB data dir, a secret required with the database, and clear refusals that never echo a password.
import path from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig, storeOptions } from '../../src/config.js';

const SECRET = 'k'.repeat(32);

t.test('the data dir by default, the database when named', async (t) => {
  const lmdb = loadConfig(['--data-dir', 'state'], {});
  t.equal(lmdb.store, path.resolve('state'));
  t.equal(storeOptions(lmdb).keySecret, undefined, 'LMDB keeps its own secret file');
  const pg = loadConfig(['--store', 'postgres://arbitra:pw@db.lan:5432/arbitra'], { ARBITRA_KEY_SECRET: SECRET });
  t.equal(pg.store, 'postgres://arbitra:pw@db.lan:5432/arbitra');
  t.equal(storeOptions(pg).keySecret, SECRET, 'the secret reaches the store');
  t.equal(loadConfig([], { ARBITRA_STORE_URL: 'postgresql://db/x', ARBITRA_KEY_SECRET: SECRET }).store, 'postgresql://db/x');
});

t.test('refusals name the setting and hide the password', async (t) => {
  t.throws(() => loadConfig(['--store', 'mysql://u:hunter2@db/x'], { ARBITRA_KEY_SECRET: SECRET }), {
    constructor: ConfigError,
    message: '--store must be a postgres:// or postgresql:// URL, got "mysql://…@db/x"',
  });
  t.throws(() => loadConfig(['--store', 'postgres://db/x'], {}), /--store needs ARBITRA_KEY_SECRET \(at least 32 characters\), the same on every node/);
  t.throws(() => loadConfig([], { ARBITRA_STORE_URL: 'postgres://db/x' }), /ARBITRA_STORE_URL needs ARBITRA_KEY_SECRET/);
  t.throws(() => loadConfig([], { ARBITRA_KEY_SECRET: 'short' }), /ARBITRA_KEY_SECRET must be at least 32 characters/);
});

t.test('--store-pool bounds the connections of each process', async (t) => {
  t.equal(storeOptions(loadConfig([], {})).poolSize, 4, 'a few per process by default');
  t.equal(storeOptions(loadConfig(['--store-pool', '12'], {})).poolSize, 12);
  t.throws(() => loadConfig([], { ARBITRA_STORE_POOL: '0' }), /ARBITRA_STORE_POOL must be an integer from 1 to 1000, got "0"/);
});

t.test('--slot-lease-seconds reaches the store; unset, the store keeps its default', async (t) => {
  t.equal(storeOptions(loadConfig([], {})).slotLeaseSeconds, undefined);
  t.equal(storeOptions(loadConfig(['--slot-lease-seconds', '8'], {})).slotLeaseSeconds, 8);
  t.equal(storeOptions(loadConfig([], { ARBITRA_SLOT_LEASE_SECONDS: '45' })).slotLeaseSeconds, 45);
  t.throws(() => loadConfig([], { ARBITRA_SLOT_LEASE_SECONDS: '2' }), /ARBITRA_SLOT_LEASE_SECONDS must be an integer from 3 to 86400, got "2"/);
});
