// What every PostgreSQL store module shares: transactions on a checked-out client, advisory lock
// keys, and the mapping of timestamps back to the ISO strings the records carry.
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import pg from 'pg';
import { isBrokenConnection } from './outage.js';

// Bounds on every wait for the database. pg waits forever by default (for a pool slot, a connection,
// an answer), and PostgreSQL lets a statement wait forever on a lock, so a database that is down,
// frozen or partitioned away would hang every request. Every statement of ours is a point lookup or
// a small update that takes milliseconds, so these bounds are far above any normal wait and turn an
// outage into a prompt error (StoreUnavailableError, answered 503 with Retry-After).

/**
 * A new connection (TCP and startup). A server on a LAN answers in milliseconds; 5 s covers a
 * loaded one, and a server that is down refuses at once anyway.
 */
export const CONNECT_TIMEOUT_MS = 5_000;
/**
 * A request's wait for a free connection of its process's pool. A burst queues here (1,000
 * admissions of one user take their turns on its lock, a few milliseconds each), so this is longer
 * than the other bounds; past it the database is not keeping up or not answering at all.
 */
export const POOL_WAIT_MS = 20_000;
/**
 * A lock wait inside PostgreSQL: the admissions of one user queue on its advisory lock, each holding
 * it for a few milliseconds, so 3 s means the holder is stuck (a node frozen mid-transaction).
 */
export const LOCK_TIMEOUT_MS = 3_000;
/** One statement, lock waits included, cancelled by the server itself; above LOCK_TIMEOUT_MS. */
export const STATEMENT_TIMEOUT_MS = 5_000;
/**
 * The client's own bound on an answer, for a server that cannot cancel anything (frozen, or
 * unreachable with no RST to tell us). Above STATEMENT_TIMEOUT_MS, so a slow statement is normally
 * cancelled by the server first and its connection stays usable.
 */
export const QUERY_TIMEOUT_MS = 6_000;
/**
 * A session idle inside a transaction. Ours send their statements back to back, so such a session
 * belongs to a node that died or lost the network mid-transaction; the server ends it and releases
 * its locks (a user's advisory lock among them) instead of holding them until TCP gives up.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

/** pg-pool bounds its queue and its clients' connects with one setting; this client has its own. */
class BoundedClient extends pg.Client {
  constructor(config?: pg.ClientConfig) {
    super({ ...config, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  }
}

/** The pool every request uses: bounded connect, statement, lock and answer waits, TCP keepalive. */
export function requestPoolConfig(url: string, max: number): pg.PoolConfig {
  return {
    connectionString: url,
    max,
    Client: BoundedClient,
    connectionTimeoutMillis: POOL_WAIT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    lock_timeout: LOCK_TIMEOUT_MS,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    // Lets the kernel notice a peer that vanished without a word while a connection sits idle.
    keepAlive: true,
    keepAliveInitialDelayMillis: 30_000,
  };
}

/**
 * Runs work that may rightly take long and is no request's wait on a connection of its own, closed
 * afterwards (so it never counts against the requests' pool): migrations at start (DDL on big
 * tables, the advisory lock of a node migrating first) and the purge of a large backlog. Its
 * connect is bounded and a session idle in a transaction still ends; its statements are not.
 */
export async function withMaintenanceConnection<T>(url: string, log: (line: string) => void, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 30_000,
  });
  pool.on('error', (err) => log(`PostgreSQL connection lost: ${err.message}`));
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

/**
 * A client checked out of the pool for several statements. pg-pool listens for a client's 'error'
 * only while it is idle in the pool, so a connection lost while checked out (the server shutting
 * down mid-transaction) would raise an unhandled 'error' and end the process; the failed statement
 * already carries the error, so the listener here only keeps the process alive. done(err) destroys
 * a client that failed rather than handing a broken or still-busy connection (a statement past
 * QUERY_TIMEOUT_MS may still be running on it) to the next request.
 */
export async function checkout(pool: pg.Pool): Promise<{ client: pg.PoolClient; done: (err?: unknown) => void }> {
  const client = await pool.connect();
  const ignore = (): void => undefined;
  client.on('error', ignore);
  return {
    client,
    done(err) {
      client.removeListener('error', ignore);
      client.release(err === undefined ? undefined : err instanceof Error ? err : new Error(inspect(err)));
    },
  };
}

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
  const { client, done } = await checkout(pool);
  let failed: unknown;
  try {
    // The key is a number computed here, never text from a request; one round trip for both.
    await client.query(lock === undefined ? 'begin' : `begin; select pg_advisory_xact_lock(${lockKey(lock)})`);
    const result = await fn(client);
    // Resolving only after the commit's answer: what the caller acknowledges is committed.
    await client.query('commit');
    return result;
  } catch (err) {
    if (isBrokenConnection(err)) {
      // Nothing to roll back on: the server aborts the transaction of a session that ends. A
      // rollback sent anyway would queue behind a statement that may never answer.
      failed = err;
    } else {
      // A rollback that fails leaves the session in an unknown state: it is destroyed, not reused.
      await client.query('rollback').catch((rollbackErr: unknown) => (failed = rollbackErr));
    }
    throw err;
  } finally {
    done(failed);
  }
}

export function isoOf(d: Date): string;
export function isoOf(d: Date | null): string | null;
export function isoOf(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}
