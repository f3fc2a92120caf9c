// Usage counters and the state behind the request gate. Each admission is one LMDB write
// transaction (transactionSync), and LMDB's writer lock is shared by every process that opens the
// environment, so checks and increments are exact across cluster workers.
import type { StoreEnv } from './env.js';
import { countsAsRateLimited, refusalOf, startingMicro } from './admission.js';
import { utcDay, utcMonth, windowEnd } from './clock.js';
import { randomBase62 } from './secret.js';
import type { AdmitResult, CounterStore, FailureWindow, UsageDayRow } from './types.js';

interface DayCounts {
  requests: number;
  rate_limited: number;
}

interface Slot {
  pid: number;
  at: number;
}

/** A slot older than this is taken to be leaked even when its pid is alive (pid reuse). */
const SLOT_STALE_MS = 15 * 60 * 1000;

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the pid exists but belongs to someone else, so it is alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface CounterStoreInternal extends CounterStore {
  /**
   * Removes per-address request windows that have ended, at most `limit` of them; returns how many.
   * Anyone can open one from a new address, so they must not outlive their minute.
   */
  purgeAddressWindows(nowMs: number, limit: number): number;
}

export function createCounterStore(env: StoreEnv): CounterStoreInternal {
  const { usage_day, user_day, user_month, rate, in_flight, ip_rate, secret_failures, balances } = env.dbs;

  function bump(keyId: string, day: string, field: keyof DayCounts): void {
    const cur = (usage_day.get([keyId, day]) as DayCounts | undefined) ?? { requests: 0, rate_limited: 0 };
    usage_day.putSync([keyId, day], { ...cur, [field]: cur[field] + 1 });
  }

  function liveSlots(keyId: string, nowMs: number): number {
    let live = 0;
    // Collected first: removing under an open cursor is not safe.
    const entries = [...in_flight.getRange({ start: [keyId], end: [keyId, '\uffff'] })];
    for (const { key, value } of entries) {
      const slot = value as Slot;
      if (nowMs - slot.at > SLOT_STALE_MS || !pidAlive(slot.pid)) in_flight.removeSync(key);
      else live++;
    }
    return live;
  }

  function balanceIn(userId: string, startingBalanceEur: number): number {
    return (balances.get(userId) as number | undefined) ?? startingMicro(startingBalanceEur);
  }

  return {
    async admit(key, limits, nowMs = Date.now()) {
      const day = utcDay(nowMs);
      const month = utcMonth(nowMs);
      const second = Math.floor(nowMs / 1000);
      return env.root.transactionSync((): AdmitResult => {
        const r = rate.get(key.id) as { second: number; count: number } | undefined;
        const inSecond = r && r.second === second ? r.count : 0;
        const monthCount = (user_month.get([key.user_id, month]) as number | undefined) ?? 0;
        const dayCount = (user_day.get([key.user_id, day]) as number | undefined) ?? 0;
        const refusal = refusalOf(
          { inFlight: liveSlots(key.id, nowMs), inSecond, month: monthCount, day: dayCount, balanceMicro: balanceIn(key.user_id, limits.startingBalanceEur) },
          limits,
          nowMs,
        );
        if (refusal) {
          if (countsAsRateLimited(refusal)) bump(key.id, day, 'rate_limited');
          return refusal;
        }
        rate.putSync(key.id, { second, count: inSecond + 1 });
        user_day.putSync([key.user_id, day], dayCount + 1);
        user_month.putSync([key.user_id, month], monthCount + 1);
        bump(key.id, day, 'requests');
        const slotId = randomBase62(16);
        in_flight.putSync([key.id, slotId], { pid: process.pid, at: nowMs } satisfies Slot);
        return { ok: true, slotId };
      });
    },

    async release(keyId, slotId) {
      env.root.transactionSync(() => in_flight.removeSync([keyId, slotId]));
    },

    purgeAddressWindows(nowMs, limit) {
      const minute = Math.floor(nowMs / 60000);
      return env.root.transactionSync(() => {
        // Collected first: removing under an open cursor is not safe.
        const ended: string[] = [];
        for (const { key, value } of ip_rate.getRange({})) {
          if ((value as { minute: number }).minute < minute) ended.push(key as string);
          if (ended.length >= limit) break;
        }
        for (const ip of ended) ip_rate.removeSync(ip);
        return ended.length;
      });
    },

    async hitIp(ip, perMinute, nowMs = Date.now()) {
      const minute = Math.floor(nowMs / 60000);
      return env.root.transactionSync(() => {
        const r = ip_rate.get(ip) as { minute: number; count: number } | undefined;
        const count = r && r.minute === minute ? r.count : 0;
        if (count >= perMinute) return Math.max(1, Math.ceil(((minute + 1) * 60000 - nowMs) / 1000));
        ip_rate.putSync(ip, { minute, count: count + 1 });
        return 0;
      });
    },

    async secretFailures(scope, windowSeconds, nowMs = Date.now()) {
      const endsAt = windowEnd(nowMs, windowSeconds);
      return { count: (secret_failures.get([endsAt, scope]) as number | undefined) ?? 0, endsAt };
    },

    async addSecretFailure(scope, windowSeconds, nowMs = Date.now()) {
      const endsAt = windowEnd(nowMs, windowSeconds);
      return env.root.transactionSync((): FailureWindow => {
        // Collected first: removing under an open cursor is not safe.
        for (const ended of [...secret_failures.getKeys({ end: [nowMs + 1], limit: 2 })]) secret_failures.removeSync(ended);
        const count = ((secret_failures.get([endsAt, scope]) as number | undefined) ?? 0) + 1;
        secret_failures.putSync([endsAt, scope], count);
        return { count, endsAt };
      });
    },

    async charge(userId, microEur, startingBalanceEur) {
      return env.root.transactionSync(() => {
        const next = balanceIn(userId, startingBalanceEur) - microEur;
        balances.putSync(userId, next);
        return next;
      });
    },

    async credit(userId, microEur, startingBalanceEur) {
      const next = env.root.transactionSync(() => {
        const value = balanceIn(userId, startingBalanceEur) + microEur;
        balances.putSync(userId, value);
        return value;
      });
      await env.flushed();
      return next;
    },

    balanceMicro: async (userId, startingBalanceEur) => balanceIn(userId, startingBalanceEur),

    async inFlight(keyId) {
      return in_flight.getKeysCount({ start: [keyId], end: [keyId, '\uffff'] });
    },

    async usageRows(keyIds) {
      const rows: UsageDayRow[] = [];
      for (const keyId of keyIds) {
        for (const { key, value } of usage_day.getRange({ start: [keyId], end: [keyId, '\uffff'] })) {
          const v = value as DayCounts;
          rows.push({ key_id: keyId, day: (key as [string, string])[1], requests: v.requests, rate_limited: v.rate_limited });
        }
      }
      return rows.sort((a, b) => b.day.localeCompare(a.day) || a.key_id.localeCompare(b.key_id));
    },

    async keyMonthRequests(keyId, month) {
      let total = 0;
      for (const { value } of usage_day.getRange({ start: [keyId, `${month}-00`], end: [keyId, `${month}-99`] })) {
        total += (value as DayCounts).requests;
      }
      return total;
    },

    userMonthRequests: async (userId, month) => (user_month.get([userId, month]) as number | undefined) ?? 0,
  };
}
