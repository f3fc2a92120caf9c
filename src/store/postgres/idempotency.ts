// Idempotency entries in PostgreSQL, scoped per API key, so a retry on another node replays the same
// response (or is refused with 409 when its body differs). Entries live ttlSeconds. A key keeps at
// most `max`, its own oldest evicted first; all keys together at most `maxTotal`, the oldest of any
// key evicted only past that. Every write runs under one advisory lock, as LMDB's writes run under
// its writer lock: a save evicts other keys' entries past the total, so saves of different keys
// must not interleave for the caps to be exact (and two evictions never wait on each other's rows).
// A save is a few short statements after a decision that took far longer.
import type pg from 'pg';
import type { IdempotencyLookup, IdempotencyStore } from '../types.js';
import { lockKey, transaction } from './db.js';

const LOCK = 'idempotency';

export interface PgIdempotencyStore extends IdempotencyStore {
  /** Removes entries created before cutoffMs; returns how many. */
  purgeBefore(db: pg.PoolClient, cutoffMs: number): Promise<number>;
}

/**
 * Deletes the rows `victims` selects (key_id, idempotency_key) and uncounts them; returns how many.
 * `victims` is one of this module's own queries, never text from a request.
 */
async function evict(db: pg.PoolClient, victims: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `with gone as (delete from idempotency where (key_id, idempotency_key) in (${victims}) returning 1),
     counted as (update idempotency_total set entries = entries - (select count(*) from gone))
     select count(*)::int as n from gone`,
    params,
  );
  return rows[0]!.n;
}

export function createIdempotencyStore(pool: pg.Pool, opts: { ttlSeconds: number; max: number; maxTotal: number }): PgIdempotencyStore {
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
      await transaction(
        pool,
        async (client) => {
          // xmax is 0 on a row this statement inserted, and set on one it updated.
          const { rows } = await client.query<{ inserted: boolean }>(
            `insert into idempotency (key_id, idempotency_key, body_hash, status, response, created_at) values ($1, $2, $3, $4, $5, $6)
             on conflict (key_id, idempotency_key) do update set body_hash = excluded.body_hash, status = excluded.status, response = excluded.response, created_at = excluded.created_at
             returning xmax = 0 as inserted`,
            [keyId, idemKey, bodyHash, responseStatus, response, new Date()],
          );
          if (!rows[0]!.inserted) return;
          await client.query('update idempotency_total set entries = entries + 1');
          await evict(
            client,
            `select key_id, idempotency_key from idempotency where key_id = $1 order by created_at, idempotency_key
             limit greatest(0, (select count(*) from idempotency where key_id = $1) - $2)`,
            [keyId, opts.max],
          );
          await evict(
            client,
            `select key_id, idempotency_key from idempotency order by created_at, key_id, idempotency_key
             limit greatest(0, (select entries from idempotency_total) - $1)`,
            [opts.maxTotal],
          );
        },
        LOCK,
      );
    },

    async purgeBefore(db, cutoffMs) {
      // Until the purge's transaction commits: take it last there, so saves wait only for this.
      await db.query('select pg_advisory_xact_lock($1)', [lockKey(LOCK).toString()]);
      return evict(db, 'select key_id, idempotency_key from idempotency where created_at < $1', [new Date(cutoffMs)]);
    },
  };
}
