// Idempotency cache in LMDB, so every worker process replays the same response. Entries are scoped
// per API key and live idempotencyTtlSeconds. A key keeps at most `max` entries, its own oldest
// evicted first, so no key's retries can push out another's; all keys together keep at most
// `maxTotal`, the oldest of any key evicted only past that. Every save is one write transaction,
// so both caps are exact however many workers save at once.
import { upgradeOnce, type StoreEnv } from './env.js';
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

export function createIdempotencyStore(env: StoreEnv, opts: { ttlSeconds: number; max: number; maxTotal: number }): IdempotencyStoreInternal {
  const { idempotency, idempotency_order, idempotency_key_order, idempotency_counts, meta } = env.dbs;
  const ttlMs = opts.ttlSeconds * 1000;

  // Every helper below runs inside a write transaction.
  const total = (): number => (meta.get(COUNT_KEY) as number | undefined) ?? 0;
  const keyCount = (keyId: string): number => (idempotency_counts.get(keyId) as number | undefined) ?? 0;

  function setKeyCount(keyId: string, n: number): void {
    if (n > 0) idempotency_counts.putSync(keyId, n);
    else idempotency_counts.removeSync(keyId);
  }

  function addEntry(keyId: string, idemKey: string, entry: Entry): void {
    idempotency.putSync([keyId, idemKey], entry);
    idempotency_order.putSync([entry.created_ms, keyId, idemKey], true);
    idempotency_key_order.putSync([keyId, entry.created_ms, idemKey], true);
    setKeyCount(keyId, keyCount(keyId) + 1);
    meta.putSync(COUNT_KEY, total() + 1);
  }

  function removeEntry(keyId: string, idemKey: string, entry: Entry): void {
    idempotency.removeSync([keyId, idemKey]);
    idempotency_order.removeSync([entry.created_ms, keyId, idemKey]);
    idempotency_key_order.removeSync([keyId, entry.created_ms, idemKey]);
    setKeyCount(keyId, keyCount(keyId) - 1);
    meta.putSync(COUNT_KEY, Math.max(0, total() - 1));
  }

  /** Removes the entry an index row names; an index row left without its entry goes alone. */
  function removeIndexed(keyId: string, createdMs: number, idemKey: string): void {
    const entry = idempotency.get([keyId, idemKey]) as Entry | undefined;
    if (entry && entry.created_ms === createdMs) removeEntry(keyId, idemKey, entry);
    else {
      idempotency_order.removeSync([createdMs, keyId, idemKey]);
      idempotency_key_order.removeSync([keyId, createdMs, idemKey]);
    }
  }

  function removeOldest(limit: number, beforeMs: number): number {
    let removed = 0;
    for (const k of [...idempotency_order.getKeys({ limit })]) {
      const [createdMs, keyId, idemKey] = k as [number, string, string];
      if (createdMs >= beforeMs) break;
      removeIndexed(keyId, createdMs, idemKey);
      removed++;
    }
    return removed;
  }

  function removeKeysOldest(keyId: string, limit: number): void {
    // Numbers sort before strings in LMDB's key order, so [keyId, '\uffff'] ends the key's range.
    for (const k of [...idempotency_key_order.getKeys({ start: [keyId], end: [keyId, '\uffff'], limit })]) {
      const [, createdMs, idemKey] = k as [string, number, string];
      removeIndexed(keyId, createdMs, idemKey);
    }
  }

  // A data dir from before the per-key cap has entries without their key's index and count.
  upgradeOnce(env, 'idempotency-per-key', () => {
    let n = 0;
    for (const { key, value } of idempotency.getRange({})) {
      const [keyId, idemKey] = key as [string, string];
      idempotency_key_order.putSync([keyId, (value as Entry).created_ms, idemKey], true);
      setKeyCount(keyId, keyCount(keyId) + 1);
      n++;
    }
    meta.putSync(COUNT_KEY, n);
  });

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
        addEntry(keyId, idemKey, { body_hash: bodyHash, status: responseStatus, response, created_ms: Date.now() });
        if (keyCount(keyId) > opts.max) removeKeysOldest(keyId, keyCount(keyId) - opts.max);
        if (total() > opts.maxTotal) removeOldest(total() - opts.maxTotal, Number.POSITIVE_INFINITY);
      });
    },

    purgeBefore(cutoffMs, limit) {
      return env.root.transactionSync(() => removeOldest(limit, cutoffMs));
    },
  };
}
