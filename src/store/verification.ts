// Single-use verification tokens for console users: "avt_" + 43 base62 characters, stored only as
// an HMAC under the server secret, with an expiry. Use is one write transaction, so a token can be
// consumed once even when two workers race.
import type { StoreEnv } from './env.js';
import { iso } from './clock.js';
import { looksLikeVerificationToken, newVerificationToken, normaliseEmail, TOKEN_HASH_PURPOSE } from './common.js';
import type { Hasher } from './secret.js';
import type { VerificationTokenRecord, VerificationTokenStore, VerificationUseResult } from './types.js';

export interface VerificationTokenStoreInternal extends VerificationTokenStore {
  /** Removes tokens that expired before nowMs, at most `limit`; returns how many. */
  purgeExpired(nowMs: number, limit: number): number;
}

export function createVerificationTokenStore(env: StoreEnv, hash: Hasher): VerificationTokenStoreInternal {
  const { verification_tokens } = env.dbs;
  return {
    async issue(user, purpose, ttlSeconds) {
      const { token, record } = newVerificationToken(user, purpose, ttlSeconds);
      await verification_tokens.put(hash(TOKEN_HASH_PURPOSE, token), record);
      await env.flushed();
      return { token, record };
    },

    async use(token, email) {
      if (!looksLikeVerificationToken(token)) return { status: 'not_found' };
      const id = hash(TOKEN_HASH_PURPOSE, token);
      const owner = normaliseEmail(email);
      const result = env.root.transactionSync((): VerificationUseResult => {
        const rec = verification_tokens.get(id) as VerificationTokenRecord | undefined;
        if (!rec || rec.email !== owner) return { status: 'not_found' };
        if (rec.used_at !== null) return { status: 'used' };
        if (Date.parse(rec.expires_at) <= Date.now()) return { status: 'expired' };
        const used: VerificationTokenRecord = { ...rec, used_at: iso(Date.now()) };
        verification_tokens.putSync(id, used);
        return { status: 'ok', record: used };
      });
      if (result.status === 'ok') await env.flushed();
      return result;
    },

    purgeExpired(nowMs, limit) {
      return env.root.transactionSync(() => {
        const expired: string[] = [];
        for (const { key, value } of verification_tokens.getRange({})) {
          if (Date.parse((value as VerificationTokenRecord).expires_at) < nowMs) expired.push(key as string);
          if (expired.length >= limit) break;
        }
        for (const k of expired) verification_tokens.removeSync(k);
        return expired.length;
      });
    },
  };
}
