// Waitlist sign-ups, one per email (lower-cased): a second sign-up updates the first.
import type { StoreEnv } from './env.js';
import { iso } from './clock.js';
import { normaliseEmail } from './common.js';
import type { WaitlistEntry, WaitlistStore } from './types.js';

export function createWaitlistStore(env: StoreEnv): WaitlistStore {
  const { waitlist } = env.dbs;
  return {
    async upsert(input) {
      const email = normaliseEmail(input.email);
      const entry = env.root.transactionSync(() => {
        const now = iso(Date.now());
        const old = waitlist.get(email) as WaitlistEntry | undefined;
        const next: WaitlistEntry = {
          email,
          company: input.company,
          use_case: input.use_case,
          consent: input.consent,
          created_at: old?.created_at ?? now,
          updated_at: now,
        };
        waitlist.putSync(email, next);
        return next;
      });
      await env.flushed();
      return entry;
    },
    get: async (email) => (waitlist.get(normaliseEmail(email)) as WaitlistEntry | undefined) ?? null,
    count: async () => waitlist.getKeysCount(),
  };
}
