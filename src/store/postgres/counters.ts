// Usage counters and the state behind the request gate in PostgreSQL, exact across nodes.
//
// An admission reads several counters (the key's slots and second, the user's day, month and
// balance) and writes them all, so it is one transaction holding an advisory lock per user: the
// admissions of one user queue on the lock, on every node, and each sees what the one before it
// committed. SERIALIZABLE would give the same exactness, but 1,000 calls racing on one key would
// mostly abort and retry; the lock makes them wait their turn instead. Counters touched alone (IP
// windows, failed secrets, balances) are single statements that check and increment in one row update.
//
// In-flight slots are leases: a node pushes the expiry of its own slots forward while they are
// held, so the slots of a node that died lapse within the lease, whatever happened to it. Only the
// slots it still holds are renewed: a slot whose release could not reach the database (an outage)
// is no longer renewed and lapses too, instead of being kept alive by its node for ever.
import type pg from 'pg';
import { countsAsRateLimited, refusalOf, startingMicro } from '../admission.js';
import { utcDay, utcMonth, windowEnd } from '../clock.js';
import { randomBase62 } from '../secret.js';
import type { CounterStore, FailureWindow, UsageDayRow } from '../types.js';
import { transaction } from './db.js';
import { isOutage } from './outage.js';

/** How long a slot outlives the last renewal of its node, unless the operator says (--slot-lease-seconds). */
export const DEFAULT_LEASE_MS = 30_000;

export interface PgCounterStore extends CounterStore {
  /** Stops renewing this node's leases (at close). */
  stop(): void;
  /** Removes the per-address request windows that have ended (the purge's step); returns how many. */
  purgeAddressWindows(db: pg.PoolClient, nowMs: number): Promise<number>;
}

const monthStart = (nowMs: number) => `${utcMonth(nowMs)}-01`;

export function createCounterStore(pool: pg.Pool, log: (line: string) => void, leaseMs = DEFAULT_LEASE_MS): PgCounterStore {
  const nodeId = `node_${randomBase62(16)}`;
  /** The slots this process holds now: admitted and not yet released. */
  const held = new Set<string>();
  const renew = setInterval(() => {
    if (held.size === 0) return;
    pool
      .query('update in_flight set expires_at = $2 where node_id = $1 and slot_id = any($3)', [nodeId, new Date(Date.now() + leaseMs), [...held]])
      .catch((err: unknown) => {
        // Caught: a failed renewal is never an unhandled rejection. The next one tries again; if the
        // database stays away longer than the lease, these slots lapse as a dead node's would.
        log(`renewing in-flight leases failed: ${(err as Error).message}`);
      });
  }, leaseMs / 3);
  renew.unref();

  const balanceChange = async (userId: string, deltaMicro: number, startingBalanceEur: number) => {
    const { rows } = await pool.query<{ micro_eur: string }>(
      `insert into balances (user_id, micro_eur) values ($1, $2::bigint + $3::bigint)
       on conflict (user_id) do update set micro_eur = balances.micro_eur + $3::bigint returning micro_eur`,
      [userId, startingMicro(startingBalanceEur), deltaMicro],
    );
    return Number(rows[0]!.micro_eur);
  };

  return {
    admit(key, limits, nowMs = Date.now()) {
      const now = new Date(nowMs);
      const day = utcDay(nowMs);
      const second = Math.floor(nowMs / 1000);
      return transaction(
        pool,
        async (client) => {
          const { rows } = await client.query<{ in_flight: number; in_second: number; month: number; day: number; balance: string | null }>(
            // Lapsed leases of this key go first (a data-modifying WITH always runs in full).
            `with lapsed as (delete from in_flight where key_id = $1 and expires_at <= $3)
             select (select count(*)::int from in_flight where key_id = $1 and expires_at > $3) as in_flight,
                    coalesce((select count from rate_windows where key_id = $1 and second = $4), 0) as in_second,
                    coalesce((select decisions from user_month where user_id = $2 and month = $5), 0) as month,
                    coalesce((select decisions from user_day where user_id = $2 and day = $6), 0) as day,
                    (select micro_eur from balances where user_id = $2) as balance`,
            [key.id, key.user_id, now, second, monthStart(nowMs), day],
          );
          const c = rows[0]!;
          const balanceMicro = c.balance === null ? startingMicro(limits.startingBalanceEur) : Number(c.balance);
          const refusal = refusalOf({ inFlight: c.in_flight, inSecond: c.in_second, month: c.month, day: c.day, balanceMicro }, limits, nowMs);
          if (refusal) {
            if (countsAsRateLimited(refusal)) {
              await client.query(
                `insert into usage_day (key_id, day, rate_limited) values ($1, $2, 1)
                 on conflict (key_id, day) do update set rate_limited = usage_day.rate_limited + 1`,
                [key.id, day],
              );
            }
            return refusal;
          }
          const slotId = randomBase62(16);
          await client.query(
            `with r as (insert into rate_windows (key_id, second, count) values ($1, $3, 1)
                        on conflict (key_id) do update set count = case when rate_windows.second = excluded.second then rate_windows.count + 1 else 1 end, second = excluded.second),
                  d as (insert into user_day (user_id, day, decisions) values ($2, $4, 1)
                        on conflict (user_id, day) do update set decisions = user_day.decisions + 1),
                  m as (insert into user_month (user_id, month, decisions) values ($2, $5, 1)
                        on conflict (user_id, month) do update set decisions = user_month.decisions + 1),
                  u as (insert into usage_day (key_id, day, requests) values ($1, $4, 1)
                        on conflict (key_id, day) do update set requests = usage_day.requests + 1)
             insert into in_flight (key_id, slot_id, node_id, expires_at) values ($1, $6, $7, $8)`,
            [key.id, key.user_id, second, day, monthStart(nowMs), slotId, nodeId, new Date(nowMs + leaseMs)],
          );
          return { ok: true as const, slotId };
        },
        `user:${key.user_id}`,
      ).then((result) => {
        // Held from the commit on: a slot whose commit failed was never taken.
        if (result.ok) held.add(result.slotId);
        return result;
      });
    },

    async release(keyId, slotId) {
      held.delete(slotId);
      try {
        await pool.query('delete from in_flight where key_id = $1 and slot_id = $2', [keyId, slotId]);
      } catch (err) {
        // The answer the slot was held for is ready; an outage now must not turn it into an error.
        // No longer renewed, the slot lapses within the lease.
        if (!isOutage(err)) throw err;
        log(`releasing an in-flight slot failed (its lease lapses within ${leaseMs / 1000} s): ${(err as Error).message}`);
      }
    },

    async purgeAddressWindows(db, nowMs) {
      // Anyone can open one from a new address, so they must not outlive their minute.
      const { rowCount } = await db.query('delete from ip_windows where minute < $1', [Math.floor(nowMs / 60000)]);
      return rowCount ?? 0;
    },

    async hitIp(ip, perMinute, nowMs = Date.now()) {
      const minute = Math.floor(nowMs / 60000);
      // The row is updated only while the window has room, so no row back means refused.
      const { rowCount } = await pool.query(
        `insert into ip_windows (ip, minute, count) values ($1, $2, 1)
         on conflict (ip) do update set count = case when ip_windows.minute = excluded.minute then ip_windows.count + 1 else 1 end, minute = excluded.minute
         where ip_windows.minute <> excluded.minute or ip_windows.count < $3
         returning count`,
        [ip, minute, perMinute],
      );
      return rowCount === 1 ? 0 : Math.max(1, Math.ceil(((minute + 1) * 60000 - nowMs) / 1000));
    },

    async secretFailures(scope, windowSeconds, nowMs = Date.now()) {
      const endsAt = windowEnd(nowMs, windowSeconds);
      const { rows } = await pool.query<{ count: number; window_end: string }>('select count, window_end from secret_failures where scope = $1', [scope]);
      const row = rows[0];
      // A window still open on a node whose clock runs ahead counts until it ends.
      return row && Number(row.window_end) > nowMs ? { count: row.count, endsAt: Number(row.window_end) } : { count: 0, endsAt };
    },

    async addSecretFailure(scope, windowSeconds, nowMs = Date.now()) {
      // A later window starts again from 1; an equal or earlier one (a node whose clock lags) adds
      // to the open window.
      const { rows } = await pool.query<{ count: number; window_end: string }>(
        `insert into secret_failures (scope, window_end, count) values ($1, $2, 1)
         on conflict (scope) do update set
           count = case when excluded.window_end > secret_failures.window_end then 1 else secret_failures.count + 1 end,
           window_end = greatest(secret_failures.window_end, excluded.window_end)
         returning count, window_end`,
        [scope, windowEnd(nowMs, windowSeconds)],
      );
      // Apart from the count, and skipping rows another statement holds: a statement that held
      // ended rows while it waited for its own would deadlock with one doing the same the other way.
      await pool.query(
        `delete from secret_failures
         where scope in (select scope from secret_failures where window_end <= $1 order by window_end limit 2 for update skip locked)`,
        [nowMs],
      );
      const row = rows[0]!;
      return { count: row.count, endsAt: Number(row.window_end) } satisfies FailureWindow;
    },

    charge: (userId, microEur, startingBalanceEur) => balanceChange(userId, -microEur, startingBalanceEur),
    credit: (userId, microEur, startingBalanceEur) => balanceChange(userId, microEur, startingBalanceEur),

    async balanceMicro(userId, startingBalanceEur) {
      const { rows } = await pool.query<{ micro_eur: string }>('select micro_eur from balances where user_id = $1', [userId]);
      return rows[0] ? Number(rows[0].micro_eur) : startingMicro(startingBalanceEur);
    },

    async inFlight(keyId) {
      const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from in_flight where key_id = $1 and expires_at > $2', [keyId, new Date()]);
      return rows[0]!.n;
    },

    async usageRows(keyIds) {
      const { rows } = await pool.query<UsageDayRow>(
        'select key_id, day::text as day, requests, rate_limited from usage_day where key_id = any($1) order by day desc, key_id',
        [keyIds],
      );
      return rows;
    },

    async keyMonthRequests(keyId, month) {
      const { rows } = await pool.query<{ n: number }>(
        `select coalesce(sum(requests), 0)::int as n from usage_day where key_id = $1 and day >= $2::date and day < $2::date + interval '1 month'`,
        [keyId, `${month}-01`],
      );
      return rows[0]!.n;
    },

    async userMonthRequests(userId, month) {
      const { rows } = await pool.query<{ decisions: number }>('select decisions from user_month where user_id = $1 and month = $2', [userId, `${month}-01`]);
      return rows[0]?.decisions ?? 0;
    },

    stop: () => clearInterval(renew),
  };
}
