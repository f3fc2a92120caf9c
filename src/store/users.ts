// Users: an email (lower-cased) maps to one stable user_id; name and image follow the console.
import type { StoreEnv } from './env.js';
import { iso } from './clock.js';
import { newUserId, normaliseEmail } from './common.js';
import type { UserRecord, UserStore } from './types.js';

/** What sibling store modules need on top of the public surface. */
export interface UserStoreInternal extends UserStore {
  /** Inside a write transaction: finds or creates the user, so concurrent processes agree on one id. */
  ensureInTxn(email: string, profile?: { name?: string | null; image?: string | null }): UserRecord;
}

export function createUserStore(env: StoreEnv): UserStoreInternal {
  const { users, user_emails } = env.dbs;

  function getByEmail(email: string): UserRecord | null {
    const id = user_emails.get(normaliseEmail(email)) as string | undefined;
    return id === undefined ? null : ((users.get(id) as UserRecord | undefined) ?? null);
  }

  function ensureInTxn(email: string, profile?: { name?: string | null; image?: string | null }): UserRecord {
    const norm = normaliseEmail(email);
    const now = iso(Date.now());
    const id = user_emails.get(norm) as string | undefined;
    const existing = id === undefined ? undefined : (users.get(id) as UserRecord | undefined);
    if (existing) {
      if (!profile || (profile.name === undefined && profile.image === undefined)) return existing;
      const updated: UserRecord = {
        ...existing,
        name: profile.name === undefined ? existing.name : profile.name,
        image: profile.image === undefined ? existing.image : profile.image,
        updated_at: now,
      };
      users.putSync(existing.id, updated);
      return updated;
    }
    const record: UserRecord = {
      id: newUserId(),
      email: norm,
      name: profile?.name ?? null,
      image: profile?.image ?? null,
      created_at: now,
      updated_at: now,
    };
    users.putSync(record.id, record);
    user_emails.putSync(norm, record.id);
    return record;
  }

  return {
    async sync(email, profile) {
      const user = env.root.transactionSync(() => ensureInTxn(email, profile ?? {}));
      await env.flushed();
      return user;
    },
    getByEmail: async (email) => getByEmail(email),
    get: async (id) => (users.get(id) as UserRecord | undefined) ?? null,
    ensureInTxn,
  };
}
