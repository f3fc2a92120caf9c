// The rules of an admission, apart from where the counts are kept: given what a key and its user
// have used, which limit (if any) refuses the next call. Every backend reads the counts and writes
// the outcome in one atomic step of its own and asks this module in between.
import { secondsToUtcMidnight, secondsToUtcMonthEnd } from './clock.js';
import type { AdmitLimits, AdmitResult } from './types.js';

export const MICRO = 1_000_000;

export type Refusal = Exclude<AdmitResult, { ok: true }>;

/** What the key and its user have used, read in the admission's own transaction. */
export interface AdmitCounts {
  /** Live in-flight slots of the key. */
  inFlight: number;
  /** Calls admitted for the key in the current second. */
  inSecond: number;
  /** Calls admitted for the user this UTC month and day. */
  month: number;
  day: number;
  /** The user's balance in micro-EUR (the starting balance when none is stored). */
  balanceMicro: number;
}

/** The refusal of the next call, checked in the order the spec gives; null when it is admitted. */
export function refusalOf(c: AdmitCounts, limits: AdmitLimits, nowMs: number): Refusal | null {
  if (c.inFlight >= limits.maxInFlight) return { ok: false, reason: 'in_flight', retryAfterSeconds: 1 };
  if (c.inSecond >= limits.requestsPerSecond) return { ok: false, reason: 'per_second', retryAfterSeconds: 1 };
  if (limits.monthlyCap > 0 && c.month >= limits.monthlyCap) {
    return { ok: false, reason: 'monthly_cap', retryAfterSeconds: secondsToUtcMonthEnd(nowMs), limit: limits.monthlyCap };
  }
  if (limits.billing) {
    if (c.balanceMicro <= 0) return { ok: false, reason: 'balance', balanceEur: (c.balanceMicro / MICRO).toFixed(6) };
  } else if (limits.freeDailyDecisions > 0 && c.day >= limits.freeDailyDecisions) {
    return { ok: false, reason: 'daily_quota', retryAfterSeconds: secondsToUtcMidnight(nowMs), limit: limits.freeDailyDecisions };
  }
  return null;
}

/** A 402 is not a rate limit, so it is not counted in the key's rate_limited. */
export const countsAsRateLimited = (r: Refusal): boolean => r.reason !== 'balance';

export const startingMicro = (startingBalanceEur: number): number => Math.round(startingBalanceEur * MICRO);
