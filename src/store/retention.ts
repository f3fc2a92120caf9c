// Retained requests (options.retain): kept under [key_id, request_id] until retention_until, with
// an expiry index the purge worker walks in time order.
import type { StoreEnv } from './env.js';
import { pseudonymOf } from './common.js';
import type { Hasher } from './secret.js';
import type { RetainedRecord, RetentionStore } from './types.js';

export interface RetentionStoreInternal extends RetentionStore {
  /** Removes records whose retention_until is before nowMs, at most `limit`; returns how many. */
  purgeExpired(nowMs: number, limit: number): number;
}

export function createRetentionStore(env: StoreEnv, hash: Hasher): RetentionStoreInternal {
  const { retention, retention_expiry } = env.dbs;

  return {
    async put(record) {
      const untilMs = Date.parse(record.retention_until);
      if (!Number.isFinite(untilMs)) throw new Error('retention_until must be an ISO timestamp');
      env.root.transactionSync(() => {
        const old = retention.get([record.key_id, record.id]) as RetainedRecord | undefined;
        if (old) retention_expiry.removeSync([Date.parse(old.retention_until), old.key_id, old.id]);
        retention.putSync([record.key_id, record.id], record);
        retention_expiry.putSync([untilMs, record.key_id, record.id], true);
      });
      await env.flushed();
    },

    async get(keyId, id) {
      return (retention.get([keyId, id]) as RetainedRecord | undefined) ?? null;
    },

    async delete(keyId, id) {
      const removed = env.root.transactionSync(() => {
        const old = retention.get([keyId, id]) as RetainedRecord | undefined;
        if (!old) return false;
        retention.removeSync([keyId, id]);
        retention_expiry.removeSync([Date.parse(old.retention_until), keyId, id]);
        return true;
      });
      if (removed) await env.flushed();
      return removed;
    },

    async retainedUntil(keyId, ids) {
      const found = new Map<string, string>();
      for (const id of ids) {
        const record = retention.get([keyId, id]) as RetainedRecord | undefined;
        if (record) found.set(id, record.retention_until);
      }
      return found;
    },

    pseudonym: (keyId) => pseudonymOf(hash, keyId),

    purgeExpired(nowMs, limit) {
      return env.root.transactionSync(() => {
        let removed = 0;
        for (const k of [...retention_expiry.getKeys({ limit })]) {
          const [untilMs, keyId, id] = k as [number, string, string];
          if (untilMs >= nowMs) break;
          const rec = retention.get([keyId, id]) as RetainedRecord | undefined;
          // Only a record whose own retention_until has passed goes; a re-put may have extended it.
          if (rec && Date.parse(rec.retention_until) < nowMs) {
            retention.removeSync([keyId, id]);
            removed++;
          }
          retention_expiry.removeSync(k);
        }
        return removed;
      });
    },
  };
}
