// The guessing throttle in front of every secret a caller presents: API keys and the console token.
// Wrong secrets are counted per client address block in the store (exact across workers and nodes),
// in a fixed window, separately for API keys and the console, so a client hammering with a revoked
// key does not lock its operator out of the console. Once an address has used up its failures,
// whatever it presents is refused with 429 before it is looked at: a right guess then answers
// exactly as a wrong one does, and costs one store read, no write.
//
// Successes are never counted and never reset the count: a tenant holding a valid key could
// otherwise interleave it with guesses and keep its window open for ever.
import type { LimitsConfig } from '../limits/config.js';
import type { Store } from '../store/index.js';
import { addressBlock } from '../addresses.js';
import { ApiError } from './errors.js';
import type { HttpRequest } from './route.js';

/** What was guessed: each is counted on its own. */
export type SecretKind = 'api_key' | 'console';

const WHAT: Record<SecretKind, string> = { api_key: 'API keys', console: 'console tokens' };

export interface SecretThrottle {
  /**
   * Checks the secret `req` presents: refused with 429 before `check` runs once the address has
   * failed too often; `check` returns what the secret opens, or null when it is wrong, which is
   * counted and answered with `wrong()` (or with 429 when this failure is the one past the limit).
   */
  check<T>(req: HttpRequest, kind: SecretKind, check: () => Promise<T | null> | T | null, wrong: () => ApiError): Promise<T>;
}

export function createSecretThrottle(store: Store, limits: LimitsConfig): SecretThrottle {
  const { secretFailureLimit: limit, secretFailureWindowSeconds: windowSeconds } = limits;

  const refusal = (kind: SecretKind, endsAt: number): ApiError => {
    const wait = Math.max(1, Math.ceil((endsAt - Date.now()) / 1000));
    return new ApiError(
      'too_many_requests',
      `Too many wrong ${WHAT[kind]} from this address (limit ${limit} per ${windowSeconds} seconds); retry after ${wait} second(s).`,
      { limit, window_seconds: windowSeconds },
      wait,
    );
  };

  return {
    async check(req, kind, check, wrong) {
      const scope = `${kind} ${addressBlock(req.ip)}`;
      const before = await store.counters.secretFailures(scope, windowSeconds);
      if (before.count >= limit) throw refusal(kind, before.endsAt);
      const opened = await check();
      if (opened !== null) return opened;
      // Concurrent guesses all pass the read above; the count each one adds decides its answer, so
      // no more than `limit` wrong secrets are ever answered as wrong in one window.
      const after = await store.counters.addSecretFailure(scope, windowSeconds);
      throw after.count > limit ? refusal(kind, after.endsAt) : wrong();
    },
  };
}
