// openStore: the one entry point to the state of the service. It opens the LMDB environment in the
// data dir once per process and hands out one module per job; everything under src/store shares it.
import { LIMITS_DEFAULTS } from '../limits/config.js';
import { createCalibrationStore, type CalibrationStore } from './calibrations.js';
import { createCounterStore, type CounterStore } from './counters.js';
import { openEnv } from './env.js';
import { createIdempotencyStore } from './idempotency.js';
import { createKeyStore } from './keys.js';
import { createRetentionStore } from './retention.js';
import { loadServerSecret, makeHasher } from './secret.js';
import { createTraceStore, type TraceStore } from './traces.js';
import type { IdempotencyStore, KeyStore, RetentionStore } from './types.js';
import { createUserStore, type UserStore } from './users.js';
import { createVerificationTokenStore, type VerificationTokenStore } from './verification.js';
import { createWaitlistStore, type WaitlistStore } from './waitlist.js';

export interface StoreOptions {
  /** Server secret for the stored hashes; defaults to the 0600 file in the data dir (ARBITRA_KEY_SECRET). */
  keySecret?: string;
  /** ARBITRA_IDEMPOTENCY_TTL_SECONDS, default 86400. */
  idempotencyTtlSeconds?: number;
  /** ARBITRA_IDEMPOTENCY_MAX, default 2048. */
  idempotencyMax?: number;
  /** Active API keys per user (ARBITRA_MAX_KEYS_PER_USER), default DEFAULT_MAX_KEYS_PER_USER. */
  maxKeysPerUser?: number;
}

export interface PurgeResult {
  retained: number;
  idempotency: number;
  verificationTokens: number;
}

export interface Store {
  readonly dataDir: string;
  readonly users: UserStore;
  readonly keys: KeyStore;
  readonly idempotency: IdempotencyStore;
  readonly retention: RetentionStore;
  /** Usage counters and the state behind the request gate and the IP limiter (src/limits uses it). */
  readonly counters: CounterStore;
  readonly waitlist: WaitlistStore;
  readonly traces: TraceStore;
  readonly verificationTokens: VerificationTokenStore;
  readonly calibrations: CalibrationStore;
  /**
   * Removes retained requests past retention_until, idempotency entries past their TTL and expired
   * verification tokens, in small transactions. The purge worker calls it off the main thread.
   */
  purgeExpired(nowMs?: number): Promise<PurgeResult>;
  /** Waits for pending writes to reach the disk, then closes the environment. */
  close(): Promise<void>;
}

/** Per-transaction batch of the purge, so the writer lock is never held for long. */
const PURGE_BATCH = 500;

export async function openStore(dataDir: string, opts: StoreOptions = {}): Promise<Store> {
  const env = openEnv(dataDir);
  const hash = makeHasher(loadServerSecret(dataDir, opts.keySecret));
  const idempotencyTtlSeconds = opts.idempotencyTtlSeconds ?? LIMITS_DEFAULTS.idempotencyTtlSeconds;
  const users = createUserStore(env);
  const idempotency = createIdempotencyStore(env, {
    ttlSeconds: idempotencyTtlSeconds,
    max: opts.idempotencyMax ?? LIMITS_DEFAULTS.idempotencyMax,
  });
  const retention = createRetentionStore(env, hash);
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
    dataDir,
    users,
    keys: createKeyStore(env, users, hash, opts.maxKeysPerUser),
    idempotency,
    retention,
    counters: createCounterStore(env),
    waitlist: createWaitlistStore(env),
    traces: createTraceStore(env),
    verificationTokens,
    calibrations: createCalibrationStore(env),
    async purgeExpired(nowMs = Date.now()) {
      const result: PurgeResult = {
        retained: drain(() => retention.purgeExpired(nowMs, PURGE_BATCH)),
        idempotency: drain(() => idempotency.purgeBefore(nowMs - idempotencyTtlSeconds * 1000, PURGE_BATCH)),
        verificationTokens: drain(() => verificationTokens.purgeExpired(nowMs, PURGE_BATCH)),
      };
      await env.flushed();
      return result;
    },
    async close() {
      await env.flushed();
      await env.root.close();
    },
  };
}

export { normaliseEmail } from './users.js';
export { looksLikeApiKey, KEY_PREFIX, DEFAULT_MAX_KEYS_PER_USER, KeyLimitError } from './keys.js';
export type { UserStore } from './users.js';
export type { CounterStore, UsageDayRow, AdmitResult, AdmitLimits } from './counters.js';
export type { WaitlistStore } from './waitlist.js';
export type { TraceStore } from './traces.js';
export type { CalibrationStore } from './calibrations.js';
export type { VerificationTokenStore } from './verification.js';
