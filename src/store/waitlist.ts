// Waitlist sign-ups, one per email (lower-cased). The first sign-up of an email stands: the route
// needs no key, so a later one may come from anyone who knows the address.
import type { StoreEnv } from './env.js';
import { iso } from './clock.js';
import { normaliseEmail } from './common.js';
import type { WaitlistEntry, WaitlistStore } from './types.js';

export function createWaitlistStore(env: StoreEnv): WaitlistStore {
  const { waitlist } = env.dbs;
  return {
    async add(input) {
      const email = normaliseEmail(input.email);
      const { entry, added } = env.root.transactionSync(() => {
        const old = waitlist.get(email) as WaitlistEntry | undefined;
        if (old) return { entry: old, added: false };
        const now = iso(Date.now());
        const next: WaitlistEntry = { email, company: input.company, use_case: input.use_case, consent: input.consent, created_at: now, updated_at: now };
        waitlist.putSync(email, next);
        return { entry: next, added: true };
      });
      if (added) await env.flushed();
      return entry;
    },
    get: async (email) => (waitlist.get(normaliseEmail(email)) as WaitlistEntry | undefined) ?? null,
    count: async () => waitlist.getKeysCount(),
  };
}
