// openPostgresStore: the state of the service in one PostgreSQL database that every node shares.
// It migrates the schema at start (safely when nodes start together), checks that this node hashes
// with the same server secret as the others, and hands out one module per job over one pool.
import pg from 'pg';
import { IDEMPOTENCY_DEFAULTS } from '../common.js';
import { makeHasher } from '../secret.js';
import type { PurgeResult, Store, StoreOptions } from '../types.js';
import { createCalibrationStore } from './calibrations.js';
import { createCounterStore } from './counters.js';
import { lockKey, requestPoolConfig, transaction, withMaintenanceConnection } from './db.js';
import { createIdempotencyStore } from './idempotency.js';
import { createKeyStore } from './keys.js';
import { migrate } from './migrate.js';
import { asStoreError, guarded } from './outage.js';
import { createRetentionStore } from './retention.js';
import { createTraceStore } from './traces.js';
import { createUserStore } from './users.js';
import { createVerificationTokenStore } from './verification.js';
import { createWaitlistStore } from './waitlist.js';

const DEFAULT_POOL_SIZE = 10;

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//.test(location);
}

/** The URL without its password, for messages. */
function shown(url: string): string {
  const u = new URL(url);
  u.password = '';
  return u.toString();
}

/**
 * Every node must hash with the same secret, or a key created on one is unknown to the others. The
 * first node records a check value of its secret; a node with another secret is refused at start.
 */
async function checkSecret(pool: pg.Pool, hash: ReturnType<typeof makeHasher>): Promise<void> {
  const check = hash('key-secret-check', 'arbitra');
  await pool.query("insert into cluster_settings (name, value) values ('key_secret_check', $1) on conflict (name) do nothing", [check]);
  const { rows } = await pool.query<{ value: string }>("select value from cluster_settings where name = 'key_secret_check'");
  if (rows[0]?.value !== check) {
    throw new Error('ARBITRA_KEY_SECRET differs from the secret the other nodes on this database use; give every node the same one');
  }
}

export async function openPostgresStore(url: string, opts: StoreOptions = {}): Promise<Store> {
  if (opts.keySecret === undefined || opts.keySecret === '') {
    throw new Error('a PostgreSQL store needs ARBITRA_KEY_SECRET, the same on every node');
  }
  if (opts.keySecret.length < 32) throw new Error('ARBITRA_KEY_SECRET must be at least 32 characters');
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const pool = new pg.Pool(requestPoolConfig(url, opts.poolSize ?? DEFAULT_POOL_SIZE));
  // An idle connection the server drops (restart, failover) is replaced by the pool; without a
  // listener its error would end the process.
  pool.on('error', (err) => log(`PostgreSQL connection lost: ${err.message}`));
  try {
    await withMaintenanceConnection(url, log, (db) => migrate(db));
    const hash = makeHasher(Buffer.from(opts.keySecret, 'utf8'));
    await checkSecret(pool, hash);
    const idempotencyTtlSeconds = opts.idempotencyTtlSeconds ?? IDEMPOTENCY_DEFAULTS.ttlSeconds;
    const idempotency = createIdempotencyStore(pool, {
      ttlSeconds: idempotencyTtlSeconds,
      max: opts.idempotencyMax ?? IDEMPOTENCY_DEFAULTS.max,
      maxTotal: opts.idempotencyMaxTotal ?? IDEMPOTENCY_DEFAULTS.maxTotal,
    });
    const traces = createTraceStore(pool);
    const retention = createRetentionStore(pool, hash);
    const verificationTokens = createVerificationTokenStore(pool, hash);
    const counters = createCounterStore(pool, log, opts.slotLeaseSeconds === undefined ? undefined : opts.slotLeaseSeconds * 1000);
    return {
      location: shown(url),
      // Every module guarded: an outage reaches the caller as StoreUnavailableError.
      users: guarded(createUserStore(pool)),
      keys: guarded(createKeyStore(pool, hash, opts.maxKeysPerUser)),
      idempotency: guarded(idempotency),
      retention: guarded(retention),
      counters: guarded(counters),
      waitlist: guarded(createWaitlistStore(pool)),
      traces: guarded(traces),
      verificationTokens: guarded(verificationTokens),
      calibrations: guarded(createCalibrationStore(pool)),
      // On a connection of its own, with no statement bound: a large backlog may take long to delete.
      purgeExpired: (nowMs = Date.now()) =>
        withMaintenanceConnection(url, log, (maintenance) =>
          transaction(maintenance, async (client) => {
            // One node purges at a time; the others find the lock taken and leave it to that one.
            const { rows } = await client.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [lockKey('purge').toString()]);
            const result: PurgeResult = { retained: 0, idempotency: 0, verificationTokens: 0, traces: 0, addressWindows: 0 };
            if (rows[0]!.ok) {
              result.retained = await retention.purgeExpired(client, nowMs);
              result.verificationTokens = await verificationTokens.purgeExpired(client, nowMs);
              result.traces = await traces.purgeExpired(client, nowMs);
              result.addressWindows = await counters.purgeAddressWindows(client, nowMs);
              // Last: it takes the lock every idempotency save takes, held until this commits.
              result.idempotency = await idempotency.purgeBefore(client, nowMs - idempotencyTtlSeconds * 1000);
            }
            return result;
          }),
        ).catch((err: unknown) => {
          throw asStoreError(err);
        }),
      async ping() {
        await pool.query('select 1').catch((err: unknown) => {
          throw asStoreError(err);
        });
      },
      async close() {
        counters.stop();
        await pool.end();
      },
    };
  } catch (err) {
    await pool.end();
    throw err;
  }
}
