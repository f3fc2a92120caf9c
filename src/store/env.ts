// The one LMDB environment in the data dir and its named sub-databases. Every module of the store
// gets its databases from here; nothing else opens LMDB.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type Key, type RootDatabase } from 'lmdb';

export const DB_NAMES = [
  'users', // user_id -> UserRecord
  'user_emails', // email -> user_id
  'keys', // key_id -> StoredKey
  'key_hashes', // hmac(secret) hex -> key_id
  'user_keys', // [user_id, key_id] -> true
  'key_last_used', // key_id -> ms (kept apart so marking use never races a revoke)
  'idempotency', // [key_id, idempotency_key] -> IdempotencyEntry
  'idempotency_order', // [created_ms, key_id, idempotency_key] -> true (eviction and purge order)
  'idempotency_key_order', // [key_id, created_ms, idempotency_key] -> true (a key's own eviction order)
  'idempotency_counts', // key_id -> entries the key holds
  'retention', // [key_id, request_id] -> RetainedRecord
  'retention_expiry', // [retention_until_ms, key_id, request_id] -> true
  'usage_day', // [key_id, 'YYYY-MM-DD'] -> { requests, rate_limited }
  'user_day', // [user_id, 'YYYY-MM-DD'] -> decisions admitted
  'user_month', // [user_id, 'YYYY-MM'] -> decisions admitted
  'meta', // small counters kept with the data (the idempotency entry count) and the upgrades done
  'rate', // key_id -> { second, count }
  'in_flight', // [key_id, slot_id] -> { pid, at }
  'ip_rate', // ip -> { minute, count }
  'secret_failures', // [window_end_ms, scope] -> failed secrets in that window (ordered by end, so ended windows are cleared from the front)
  'balances', // user_id -> balance in micro-EUR (integer)
  'waitlist', // email -> WaitlistEntry
  'traces', // [key_id, request_id, question] -> TraceRecord
  'trace_expiry', // [expires_ms, key_id, request_id, question] -> true (purge order)
  'trace_usage', // key_id -> { traces, bytes } the key holds (its quota's count)
  'verification_tokens', // hmac(token) hex -> VerificationTokenRecord
  'calibrations', // [model_sha256, layout, n] -> CalibrationRecord
] as const;

export type DbName = (typeof DB_NAMES)[number];

export interface StoreEnv {
  root: RootDatabase;
  dbs: Record<DbName, Database<unknown, Key>>;
  /**
   * Waits until every write committed so far (async or transactionSync) is flushed to disk.
   * Acknowledging writes call this before returning, so a kill -9 right after a 200 loses nothing.
   */
  flushed(): Promise<void>;
}

/**
 * Runs `upgrade` once per data dir, in a write transaction with the mark that it ran: a module whose
 * records gained an index brings the records of an older version up to date at the first open.
 * Processes opening the store together queue on the writer lock, and the first one does it.
 */
export function upgradeOnce(env: StoreEnv, name: string, upgrade: () => void): void {
  const mark = `upgraded:${name}`;
  if (env.dbs.meta.get(mark) !== undefined) return;
  env.root.transactionSync(() => {
    if (env.dbs.meta.get(mark) !== undefined) return;
    upgrade();
    env.dbs.meta.putSync(mark, Date.now());
  });
}

export function openEnv(dataDir: string): StoreEnv {
  mkdirSync(dataDir, { recursive: true });
  const root = open({
    path: join(dataDir, 'arbitra.mdb'),
    maxDbs: DB_NAMES.length + 4,
    // Commits become visible at once (counters stay fast) and are fsynced just after; acknowledging
    // writes wait on root.flushed. Never noSync: durability is a requirement.
    overlappingSync: true,
    noSync: false,
    noMetaSync: false,
    mapSize: 2 * 1024 ** 3,
  });
  const dbs = {} as Record<DbName, Database<unknown, Key>>;
  for (const name of DB_NAMES) {
    dbs[name] = root.openDB({ name, encoding: 'msgpack' });
  }
  return {
    root,
    dbs,
    flushed: async () => {
      await root.flushed;
    },
  };
}
