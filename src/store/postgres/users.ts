// Users in PostgreSQL: one row per (lower-cased) email; the unique email makes concurrent first
// sign-ins from several nodes agree on one id.
import type pg from 'pg';
import { newUserId, normaliseEmail } from '../common.js';
import type { UserRecord, UserStore } from '../types.js';
import { isoOf } from './db.js';

interface UserRow {
  id: string;
  email: string;
  name: string | null;
  image: string | null;
  created_at: Date;
  updated_at: Date;
}

export const toUser = (r: UserRow): UserRecord => ({ ...r, created_at: isoOf(r.created_at), updated_at: isoOf(r.updated_at) });

type Profile = { name?: string | null; image?: string | null };

/**
 * The user of this email, created when new, its name/image set when given; one statement, and when
 * run in a transaction the row stays locked until commit (keys count a user's keys under it).
 */
export async function ensureUser(db: pg.Pool | pg.PoolClient, email: string, profile: Profile = {}): Promise<UserRecord> {
  const now = new Date();
  const { rows } = await db.query<UserRow>(
    `insert into users (id, email, name, image, created_at, updated_at) values ($1, $2, $3, $4, $5, $5)
     on conflict (email) do update set
       name = case when $6 then excluded.name else users.name end,
       image = case when $7 then excluded.image else users.image end,
       updated_at = case when $6 or $7 then excluded.updated_at else users.updated_at end
     returning *`,
    [newUserId(), normaliseEmail(email), profile.name ?? null, profile.image ?? null, now, profile.name !== undefined, profile.image !== undefined],
  );
  return toUser(rows[0]!);
}

export function createUserStore(pool: pg.Pool): UserStore {
  const one = async (where: string, value: string) => {
    const { rows } = await pool.query<UserRow>(`select * from users where ${where} = $1`, [value]);
    return rows[0] ? toUser(rows[0]) : null;
  };
  return {
    sync: (email, profile) => ensureUser(pool, email, profile),
    getByEmail: (email) => one('email', normaliseEmail(email)),
    get: (id) => one('id', id),
  };
}
