// Idempotency entries in PostgreSQL, scoped per API key, so a retry on another node replays the same
// response (or is refused with 409 when its body differs). Entries live ttlSeconds; past `max`
// entries the oldest are evicted.
import type pg from 'pg';
import type { IdempotencyLookup, IdempotencyStore } from '../types.js';

export interface PgIdempotencyStore extends IdempotencyStore {
  /** Removes entries created before cutoffMs; returns how many. */
  purgeBefore(db: pg.PoolClient, cutoffMs: number): Promise<number>;
}

export function createIdempotencyStore(pool: pg.Pool, opts: { ttlSeconds: number; max: number }): PgIdempotencyStore {
  return {
    async lookup(keyId, idemKey, bodyHash): Promise<IdempotencyLookup> {
      const { rows } = await pool.query<{ body_hash: string; status: number; response: Buffer }>(
        `select body_hash, status, response from idempotency
         where key_id = $1 and idempotency_key = $2 and created_at > $3`,
        [keyId, idemKey, new Date(Date.now() - opts.ttlSeconds * 1000)],
      );
      const entry = rows[0];
      if (!entry) return { status: 'miss' };
      if (entry.body_hash !== bodyHash) return { status: 'conflict' };
      return { status: 'hit', response: entry.response, responseStatus: entry.status };
    },

    async save(keyId, idemKey, bodyHash, responseStatus, response) {
      await pool.query(
        `insert into idempotency (key_id, idempotency_key, body_hash, status, response, created_at) values ($1, $2, $3, $4, $5, $6)
         on conflict (key_id, idempotency_key) do update set body_hash = excluded.body_hash, status = excluded.status, response = excluded.response, created_at = excluded.created_at`,
        [keyId, idemKey, bodyHash, responseStatus, response, new Date()],
      );
      // A separate statement: the insert above is not visible to a count in its own statement.
      await pool.query(
        `delete from idempotency where (key_id, idempotency_key) in (
           select key_id, idempotency_key from idempotency order by created_at, key_id, idempotency_key
           limit greatest(0, (select count(*) from idempotency) - $1))`,
        [opts.max],
      );
    },

    async purgeBefore(db, cutoffMs) {
      return (await db.query('delete from idempotency where created_at < $1', [new Date(cutoffMs)])).rowCount ?? 0;
    },
  };
}
