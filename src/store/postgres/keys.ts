// API keys in PostgreSQL: only the HMAC of the secret is stored, verification is a lookup by it, and
// a revoke is one committed update, so the very next request on any node is refused.
import type pg from 'pg';
import { DEFAULT_MAX_KEYS_PER_USER, KEY_HASH_PURPOSE, KeyLimitError, keyName, looksLikeApiKey, mintApiKey, newKeyId, normaliseEmail } from '../common.js';
import type { Hasher } from '../secret.js';
import type { ApiKeyRecord, KeyStore } from '../types.js';
import { isoOf, transaction } from './db.js';
import { ensureUser } from './users.js';

interface KeyRow {
  id: string;
  user_id: string;
  email: string;
  name: string;
  prefix: string;
  masked: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const COLUMNS = 'k.id, k.user_id, u.email, k.name, k.prefix, k.masked, k.created_at, k.revoked_at, k.last_used_at';

const toKey = (r: KeyRow): ApiKeyRecord => ({
  ...r,
  created_at: isoOf(r.created_at),
  revoked_at: isoOf(r.revoked_at),
  last_used_at: isoOf(r.last_used_at),
});

export function createKeyStore(pool: pg.Pool, hash: Hasher, maxActivePerUser = DEFAULT_MAX_KEYS_PER_USER): KeyStore {
  return {
    async create(email, name) {
      const { secret, prefix, masked } = mintApiKey();
      const record = await transaction(pool, async (client) => {
        // ensureUser leaves the user's row locked until commit, so concurrent creates for one user
        // on any node count the active keys one after another and never pass the limit together.
        const user = await ensureUser(client, email);
        const { rows } = await client.query<{ n: number }>('select count(*)::int as n from api_keys where user_id = $1 and revoked_at is null', [user.id]);
        if (rows[0]!.n >= maxActivePerUser) throw new KeyLimitError(maxActivePerUser);
        const inserted = await client.query<Omit<KeyRow, 'email'>>(
          `insert into api_keys (id, user_id, name, prefix, masked, secret_hash, created_at) values ($1, $2, $3, $4, $5, $6, $7)
           returning id, user_id, name, prefix, masked, created_at, revoked_at, last_used_at`,
          [newKeyId(), user.id, keyName(name), prefix, masked, hash(KEY_HASH_PURPOSE, secret), new Date()],
        );
        return toKey({ ...inserted.rows[0]!, email: user.email });
      });
      return { record, secret };
    },

    async verify(secret) {
      if (!looksLikeApiKey(secret)) return null;
      // One statement reads the key as committed now (a key revoked a moment before is not found)
      // and marks it used. last_used_at is informational, so a key's row is written at most once a
      // second: a burst of requests with one key neither queues on that row nor writes per request.
      const { rows } = await pool.query<KeyRow>(
        `with k as (select * from api_keys where secret_hash = $1 and revoked_at is null),
              used as (update api_keys a set last_used_at = $2 from k
                       where a.id = k.id and (k.last_used_at is null or k.last_used_at < $2::timestamptz - interval '1 second'))
         select k.id, k.user_id, u.email, k.name, k.prefix, k.masked, k.created_at, k.revoked_at, $2::timestamptz as last_used_at
         from k join users u on u.id = k.user_id`,
        [hash(KEY_HASH_PURPOSE, secret), new Date()],
      );
      return rows[0] ? toKey(rows[0]) : null;
    },

    async list(email) {
      const { rows } = await pool.query<KeyRow>(
        `select ${COLUMNS} from api_keys k join users u on u.id = k.user_id where u.email = $1 order by k.created_at, k.id`,
        [normaliseEmail(email)],
      );
      return rows.map(toKey);
    },

    async get(id) {
      const { rows } = await pool.query<KeyRow>(`select ${COLUMNS} from api_keys k join users u on u.id = k.user_id where k.id = $1`, [id]);
      return rows[0] ? toKey(rows[0]) : null;
    },

    async revoke(id, email) {
      // A key revoked before keeps its first revoked_at.
      const { rows } = await pool.query<KeyRow>(
        `update api_keys k set revoked_at = coalesce(k.revoked_at, $3) from users u
         where u.id = k.user_id and k.id = $1 and ($2::text is null or u.email = $2)
         returning ${COLUMNS}`,
        [id, email === null ? null : normaliseEmail(email), new Date()],
      );
      return rows[0] ? toKey(rows[0]) : null;
    },
  };
}
