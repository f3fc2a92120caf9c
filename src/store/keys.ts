// API keys. The secret is "arb_" + 43 base62 characters (256 bits); only its HMAC-SHA-256 under the
// server secret is stored, and verification is a lookup by that hash.
import type { StoreEnv } from './env.js';
import { iso } from './clock.js';
import { DEFAULT_MAX_KEYS_PER_USER, KEY_HASH_PURPOSE, KeyLimitError, keyName, looksLikeApiKey, mintApiKey, newKeyId, normaliseEmail } from './common.js';
import type { Hasher } from './secret.js';
import type { UserStoreInternal } from './users.js';
import type { ApiKeyRecord, KeyStore } from './types.js';

export { DEFAULT_MAX_KEYS_PER_USER } from './common.js';

interface StoredKey extends Omit<ApiKeyRecord, 'last_used_at'> {
  hash: string;
}

export function createKeyStore(env: StoreEnv, users: UserStoreInternal, hash: Hasher, maxActivePerUser = DEFAULT_MAX_KEYS_PER_USER): KeyStore {
  const { keys, key_hashes, user_keys, key_last_used } = env.dbs;

  function toRecord(stored: StoredKey): ApiKeyRecord {
    const { hash: _hash, ...rest } = stored;
    const used = key_last_used.get(stored.id) as number | undefined;
    return { ...rest, last_used_at: used === undefined ? null : iso(used) };
  }

  function getStored(id: string): StoredKey | null {
    return (keys.get(id) as StoredKey | undefined) ?? null;
  }

  function keyIdsOf(userId: string): string[] {
    return [...user_keys.getKeys({ start: [userId], end: [userId, '\uffff'] })].map((k) => (k as [string, string])[1]);
  }

  return {
    async create(email, name) {
      const { secret, prefix, masked } = mintApiKey();
      const digest = hash(KEY_HASH_PURPOSE, secret);
      // Counted inside the write transaction, which LMDB runs one at a time across every process,
      // so concurrent creates can never pass the limit together.
      const stored = env.root.transactionSync(() => {
        const user = users.ensureInTxn(email);
        const active = keyIdsOf(user.id).filter((id) => getStored(id)?.revoked_at === null).length;
        if (active >= maxActivePerUser) throw new KeyLimitError(maxActivePerUser);
        const record: StoredKey = {
          id: newKeyId(),
          user_id: user.id,
          email: user.email,
          name: keyName(name),
          prefix,
          masked,
          created_at: iso(Date.now()),
          revoked_at: null,
          hash: digest,
        };
        keys.putSync(record.id, record);
        key_hashes.putSync(digest, record.id);
        user_keys.putSync([user.id, record.id], true);
        return record;
      });
      await env.flushed();
      return { record: toRecord(stored), secret };
    },

    async verify(secret) {
      if (!looksLikeApiKey(secret)) return null;
      const id = key_hashes.get(hash(KEY_HASH_PURPOSE, secret)) as string | undefined;
      const stored = id === undefined ? null : getStored(id);
      if (!stored || stored.revoked_at !== null) return null;
      const now = Date.now();
      // Awaited until committed (visible to every process) but not until flushed: last_used_at is
      // informational and must not add an fsync to every request.
      await key_last_used.put(stored.id, now);
      return { ...toRecord(stored), last_used_at: iso(now) };
    },

    async list(email) {
      const user = await users.getByEmail(email);
      if (!user) return [];
      const out: ApiKeyRecord[] = [];
      for (const id of keyIdsOf(user.id)) {
        const stored = getStored(id);
        if (stored) out.push(toRecord(stored));
      }
      return out.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
    },

    async get(id) {
      const stored = getStored(id);
      return stored ? toRecord(stored) : null;
    },

    async revoke(id, email) {
      const owner = email === null ? null : normaliseEmail(email);
      const result = env.root.transactionSync(() => {
        const stored = getStored(id);
        if (!stored || (owner !== null && stored.email !== owner)) return null;
        if (stored.revoked_at !== null) return stored;
        const revoked: StoredKey = { ...stored, revoked_at: iso(Date.now()) };
        keys.putSync(id, revoked);
        return revoked;
      });
      await env.flushed();
      return result ? toRecord(result) : null;
    },
  };
}
