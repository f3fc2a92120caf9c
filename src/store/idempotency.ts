// Idempotency cache in LMDB, so every worker process replays the same response. Entries are scoped
// per API key, live idempotencyTtlSeconds, and the whole cache keeps at most idempotencyMax entries,
// the oldest evicted first.
import type { StoreEnv } from './env.js';
import type { IdempotencyLookup, IdempotencyStore } from './types.js';

interface Entry {
  body_hash: string;
  status: number;
  response: Buffer;
  created_ms: number;
}

const COUNT_KEY = 'idempotency_count';

export interface IdempotencyStoreInternal extends IdempotencyStore {
  /** Removes entries created before cutoffMs, at most `limit` of them; returns how many. */
  purgeBefore(cutoffMs: number, limit: number): number;
}

export function createIdempotencyStore(env: StoreEnv, opts: { ttlSeconds: number; max: number }): IdempotencyStoreInternal {
  const { idempotency, idempotency_order, meta } = env.dbs;
  const ttlMs = opts.ttlSeconds * 1000;

  // Both helpers run inside a write transaction.
  function removeEntry(keyId: string, idemKey: string, entry: Entry): void {
    idempotency.removeSync([keyId, idemKey]);
    idempotency_order.removeSync([entry.created_ms, keyId, idemKey]);
    meta.putSync(COUNT_KEY, Math.max(0, ((meta.get(COUNT_KEY) as number | undefined) ?? 1) - 1));
  }

  function removeOldest(limit: number, beforeMs: number): number {
    let removed = 0;
    for (const k of [...idempotency_order.getKeys({ limit })]) {
      const [createdMs, keyId, idemKey] = k as [number, string, string];
      if (createdMs >= beforeMs) break;
      const entry = idempotency.get([keyId, idemKey]) as Entry | undefined;
      if (entry && entry.created_ms === createdMs) removeEntry(keyId, idemKey, entry);
      else idempotency_order.removeSync(k);
      removed++;
    }
    return removed;
  }

  return {
    async lookup(keyId, idemKey, bodyHash): Promise<IdempotencyLookup> {
      const entry = idempotency.get([keyId, idemKey]) as Entry | undefined;
      if (!entry || entry.created_ms + ttlMs <= Date.now()) return { status: 'miss' };
      if (entry.body_hash !== bodyHash) return { status: 'conflict' };
      return { status: 'hit', response: Buffer.from(entry.response), responseStatus: entry.status };
    },

    async save(keyId, idemKey, bodyHash, responseStatus, response) {
      env.root.transactionSync(() => {
        const old = idempotency.get([keyId, idemKey]) as Entry | undefined;
        if (old) removeEntry(keyId, idemKey, old);
        const entry: Entry = { body_hash: bodyHash, status: responseStatus, response, created_ms: Date.now() };
        idempotency.putSync([keyId, idemKey], entry);
        idempotency_order.putSync([entry.created_ms, keyId, idemKey], true);
        const count = ((meta.get(COUNT_KEY) as number | undefined) ?? 0) + 1;
        meta.putSync(COUNT_KEY, count);
        if (count > opts.max) removeOldest(count - opts.max, Number.POSITIVE_INFINITY);
      });
    },

    purgeBefore(cutoffMs, limit) {
      return env.root.transactionSync(() => removeOldest(limit, cutoffMs));
    },
  };
}
