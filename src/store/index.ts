// openStore: the one entry point to the state of the service. A postgres:// URL opens the shared
// PostgreSQL store (src/store/postgres); anything else is a data dir, where the LMDB environment is
// opened once per process and hands out one module per job.
import { createCalibrationStore } from './calibrations.js';
import { IDEMPOTENCY_DEFAULTS } from './common.js';
import { createCounterStore } from './counters.js';
import { openEnv } from './env.js';
import { createIdempotencyStore } from './idempotency.js';
import { createKeyStore } from './keys.js';
import { createRetentionStore } from './retention.js';
import { isPostgresUrl, openPostgresStore } from './postgres/index.js';
import { loadServerSecret, makeHasher } from './secret.js';
import { createTraceStore } from './traces.js';
import type { PurgeResult, Store, StoreOptions } from './types.js';
import { createUserStore } from './users.js';
import { createVerificationTokenStore } from './verification.js';
import { createWaitlistStore } from './waitlist.js';

/** Per-transaction batch of the purge, so the writer lock is never held for long. */
const PURGE_BATCH = 500;

export function openStore(location: string, opts: StoreOptions = {}): Promise<Store> {
  return isPostgresUrl(location) ? openPostgresStore(location, opts) : openLmdbStore(location, opts);
}

async function openLmdbStore(dataDir: string, opts: StoreOptions): Promise<Store> {
  const env = openEnv(dataDir);
  const hash = makeHasher(loadServerSecret(dataDir, opts.keySecret));
  const idempotencyTtlSeconds = opts.idempotencyTtlSeconds ?? IDEMPOTENCY_DEFAULTS.ttlSeconds;
  const users = createUserStore(env);
  const idempotency = createIdempotencyStore(env, {
    ttlSeconds: idempotencyTtlSeconds,
    max: opts.idempotencyMax ?? IDEMPOTENCY_DEFAULTS.max,
    maxTotal: opts.idempotencyMaxTotal ?? IDEMPOTENCY_DEFAULTS.maxTotal,
  });
  const traces = createTraceStore(env);
  const retention = createRetentionStore(env, hash);
  const counters = createCounterStore(env);
  const verificationTokens = createVerificationTokenStore(env, hash);

  function drain(step: () => number): number {
    let total = 0;
    for (;;) {
      const n = step();
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  return {
    location: dataDir,
    users,
    keys: createKeyStore(env, users, hash, opts.maxKeysPerUser),
    idempotency,
    retention,
    counters,
    waitlist: createWaitlistStore(env),
    traces,
    verificationTokens,
    calibrations: createCalibrationStore(env),
    async purgeExpired(nowMs = Date.now()) {
      const result: PurgeResult = {
        retained: drain(() => retention.purgeExpired(nowMs, PURGE_BATCH)),
        idempotency: drain(() => idempotency.purgeBefore(nowMs - idempotencyTtlSeconds * 1000, PURGE_BATCH)),
        verificationTokens: drain(() => verificationTokens.purgeExpired(nowMs, PURGE_BATCH)),
        traces: drain(() => traces.purgeExpired(nowMs, PURGE_BATCH)),
        addressWindows: drain(() => counters.purgeAddressWindows(nowMs, PURGE_BATCH)),
      };
      await env.flushed();
      return result;
    },
    // The environment is a file this process has open: nothing to reach.
    async ping() {},
    async close() {
      await env.flushed();
      await env.root.close();
    },
  };
}

export {
  normaliseEmail,
  looksLikeApiKey,
  KEY_PREFIX,
  DEFAULT_MAX_KEYS_PER_USER,
  IDEMPOTENCY_DEFAULTS,
  latestTraces,
  traceBytes,
  KeyLimitError,
  StoreUnavailableError,
} from './common.js';
export type * from './types.js';
