// Waitlist sign-ups in PostgreSQL, one per (lower-cased) email: the first sign-up of an email stands,
// since the route needs no key and a later one may come from anyone who knows the address.
import type pg from 'pg';
import { normaliseEmail } from '../common.js';
import type { WaitlistEntry, WaitlistStore } from '../types.js';
import { isoOf } from './db.js';

type Row = Omit<WaitlistEntry, 'created_at' | 'updated_at'> & { created_at: Date; updated_at: Date };

const toEntry = (r: Row): WaitlistEntry => ({ ...r, created_at: isoOf(r.created_at), updated_at: isoOf(r.updated_at) });

export function createWaitlistStore(pool: pg.Pool): WaitlistStore {
  const get = async (email: string): Promise<WaitlistEntry | null> => {
    const { rows } = await pool.query<Row>('select * from waitlist where email = $1', [normaliseEmail(email)]);
    return rows[0] ? toEntry(rows[0]) : null;
  };
  return {
    async add(input) {
      const { rows } = await pool.query<Row>(
        `insert into waitlist (email, company, use_case, consent, created_at, updated_at) values ($1, $2, $3, $4, $5, $5)
         on conflict (email) do nothing returning *`,
        [normaliseEmail(input.email), input.company, input.use_case, input.consent, new Date()],
      );
      // Nothing returned: the email was on the list already, and its entry stands.
      return rows[0] ? toEntry(rows[0]) : (await get(input.email))!;
    },
    get,
    async count() {
      return (await pool.query<{ n: number }>('select count(*)::int as n from waitlist')).rows[0]!.n;
    },
  };
}
