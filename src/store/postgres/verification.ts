// Single-use verification tokens in PostgreSQL, stored as an HMAC under the server secret. Use is
// one conditional update, so a token is consumed once even when two nodes race.
import type pg from 'pg';
import { looksLikeVerificationToken, newVerificationToken, normaliseEmail, TOKEN_HASH_PURPOSE } from '../common.js';
import type { Hasher } from '../secret.js';
import type { VerificationTokenRecord, VerificationTokenStore } from '../types.js';
import { isoOf } from './db.js';

interface Row {
  user_id: string;
  email: string;
  purpose: string;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
}

const toRecord = (r: Row): VerificationTokenRecord => ({
  ...r,
  created_at: isoOf(r.created_at),
  expires_at: isoOf(r.expires_at),
  used_at: isoOf(r.used_at),
});

export interface PgVerificationTokenStore extends VerificationTokenStore {
  /** Removes tokens that expired before nowMs; returns how many. */
  purgeExpired(db: pg.PoolClient, nowMs: number): Promise<number>;
}

export function createVerificationTokenStore(pool: pg.Pool, hash: Hasher): PgVerificationTokenStore {
  return {
    async issue(user, purpose, ttlSeconds) {
      const { token, record } = newVerificationToken(user, purpose, ttlSeconds);
      await pool.query('insert into verification_tokens (token_hash, user_id, purpose, created_at, expires_at) values ($1, $2, $3, $4, $5)', [
        hash(TOKEN_HASH_PURPOSE, token),
        user.id,
        purpose,
        record.created_at,
        record.expires_at,
      ]);
      return { token, record };
    },

    async use(token, email) {
      if (!looksLikeVerificationToken(token)) return { status: 'not_found' };
      const params = [hash(TOKEN_HASH_PURPOSE, token), normaliseEmail(email), new Date()];
      const used = await pool.query<Row>(
        `update verification_tokens v set used_at = $3 from users u
         where u.id = v.user_id and v.token_hash = $1 and u.email = $2 and v.used_at is null and v.expires_at > $3
         returning v.user_id, u.email, v.purpose, v.created_at, v.expires_at, v.used_at`,
        params,
      );
      if (used.rows[0]) return { status: 'ok', record: toRecord(used.rows[0]) };
      // Not consumed: say why, from the row as it is now.
      const { rows } = await pool.query<Row>(
        `select v.used_at, v.expires_at from verification_tokens v join users u on u.id = v.user_id where v.token_hash = $1 and u.email = $2`,
        params.slice(0, 2),
      );
      const row = rows[0];
      if (!row) return { status: 'not_found' };
      return { status: row.used_at !== null ? 'used' : 'expired' };
    },

    async purgeExpired(db, nowMs) {
      return (await db.query('delete from verification_tokens where expires_at < $1', [new Date(nowMs)])).rowCount ?? 0;
    },
  };
}
