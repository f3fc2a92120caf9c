// The request gate in front of POST /v1/systemone and the per-IP limiter for unauthenticated
// routes. The counting itself lives in the store (one atomic step per admission, exact across worker
// processes and nodes); this module turns its verdicts into the spec's errors.
import type { LimitsConfig } from '../limits/config.js';
import type { Admission, Charge, RequestGate } from '../limits/types.js';
import type { Store } from '../store/index.js';
import { addressBlock } from '../addresses.js';
import { ApiError } from './errors.js';

const MICRO = 1_000_000;

export function createGate(store: Store, limits: LimitsConfig): RequestGate {
  return {
    async admit(key) {
      const result = await store.counters.admit(key, limits);
      if (result.ok) {
        let released = false;
        const admission: Admission = {
          async release() {
            if (released) return;
            released = true;
            await store.counters.release(key.id, result.slotId);
          },
        };
        return admission;
      }
      switch (result.reason) {
        case 'in_flight':
          throw new ApiError(
            'rate_limited',
            `Too many requests in flight for this API key (limit ${limits.maxInFlight}); retry after ${result.retryAfterSeconds} second(s).`,
            { limit: limits.maxInFlight, limit_type: 'in_flight' },
            result.retryAfterSeconds,
          );
        case 'per_second':
          throw new ApiError(
            'rate_limited',
            `Rate limit of ${limits.requestsPerSecond} requests per second for this API key exceeded; retry after ${result.retryAfterSeconds} second(s).`,
            { limit: limits.requestsPerSecond, limit_type: 'requests_per_second' },
            result.retryAfterSeconds,
          );
        case 'daily_quota':
          throw new ApiError(
            'quota_exceeded',
            `The free daily allowance of ${result.limit} decisions is used up; it resets at midnight UTC. Add credit or set up pay-as-you-go to continue.`,
            { limit: result.limit, limit_type: 'daily_decisions', topup_url: limits.topupUrl, payg_url: limits.paygUrl },
            result.retryAfterSeconds,
          );
        case 'monthly_cap':
          throw new ApiError(
            'quota_exceeded',
            `The monthly cap of ${result.limit} decisions is reached; it resets on the first day of next month (UTC).`,
            { limit: result.limit, limit_type: 'monthly_cap' },
            result.retryAfterSeconds,
          );
        case 'balance':
          throw new ApiError('payment_required', `The account balance (${result.balanceEur} EUR) cannot cover this call. Top up or set up pay-as-you-go.`, {
            topup_url: limits.topupUrl,
            payg_url: limits.paygUrl,
            balance_eur: result.balanceEur,
          });
      }
    },

    async meter(key, usage): Promise<Charge | null> {
      if (!limits.billing) return null;
      const micro = Math.round((usage.inputTokens / 1000) * limits.pricePer1kInputTokensEur * MICRO);
      await store.counters.charge(key.user_id, micro, limits.startingBalanceEur);
      return { cost_eur: (micro / MICRO).toFixed(6), cost_currency: 'EUR' };
    },
  };
}

export interface IpLimiter {
  /** Counts one request from this address (an IPv6 one by its /64); throws 429 too_many_requests over the limit. */
  check(ip: string): Promise<void>;
}

export function createIpLimiter(store: Store, limits: LimitsConfig): IpLimiter {
  return {
    async check(ip) {
      const wait = await store.counters.hitIp(addressBlock(ip), limits.ipRequestsPerMinute);
      if (wait > 0) {
        throw new ApiError(
          'too_many_requests',
          `Too many requests from this address (limit ${limits.ipRequestsPerMinute} per minute); retry after ${wait} second(s).`,
          { limit: limits.ipRequestsPerMinute },
          wait,
        );
      }
    },
  };
}
