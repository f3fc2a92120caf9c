// What every PostgreSQL store module shares: transactions on a checked-out client, advisory lock
// keys, and the mapping of timestamps back to the ISO strings the records carry.
import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * A 64-bit advisory lock key for a name (e.g. a user id): transactions that take the same key run
 * one after another, on every node. A collision between two names only serialises them needlessly.
 */
export function lockKey(name: string): bigint {
  return createHash('sha256').update(name).digest().readBigInt64BE(0);
}

/**
 * Runs fn in a READ COMMITTED transaction on one client, holding the advisory lock of `lock` (when
 * given) from before the first statement of fn until commit. Every statement after the lock sees
 * what the previous holder committed, so a check and the write that follows it are exact.
 */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, lock?: string): Promise<T> {
  const client = await pool.connect();
  try {
    // The key is a number computed here, never text from a request; one round trip for both.
    await client.query(lock === undefined ? 'begin' : `begin; select pg_advisory_xact_lock(${lockKey(lock)})`);
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export function isoOf(d: Date): string;
export function isoOf(d: Date | null): string | null;
export function isoOf(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}
