// POST /v1/waitlist: public sign-up, limited per IP. One entry per email, the first one; the
// `website` member is a honeypot that people never see, so a filled one is answered like any
// sign-up and not stored.
import { Type } from '@sinclair/typebox';
import { ValidationFailure } from '../errors.js';
import { isValidEmail } from '../auth.js';
import { valueError } from '../../decision/schema/problems.js';
import { compileBodyParser } from '../validation.js';
import type { Route } from '../route.js';
import { createIpLimiter } from '../gate.js';
import type { LimitsConfig } from '../../limits/config.js';
import type { Store } from '../../store/index.js';

export const WaitlistRequest = Type.Object({
  email: Type.String({ maxLength: 254 }),
  company: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  use_case: Type.String({ minLength: 10, maxLength: 2000 }),
  consent: Type.Boolean({ default: false }),
  website: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
});

export const WaitlistResponse = Type.Object({
  ok: Type.Boolean({ default: true }),
  message: Type.String(),
});

const THANKS = 'Thank you! You are on the waitlist; we will be in touch.';

export function waitlistRoutes(deps: { store: Store; limits: LimitsConfig }): Route[] {
  const parse = compileBodyParser(WaitlistRequest);
  const ipLimit = createIpLimiter(deps.store, deps.limits);
  return [
    {
      method: 'POST',
      path: '/v1/waitlist',
      summary: 'Join the waitlist (one entry per email; the first sign-up stands, a later one changes nothing). Limited per IP.',
      schemas: { body: WaitlistRequest, response: WaitlistResponse },
      auth: 'none',
      tag: 'waitlist',
      // 503: the per-IP window and the entry are kept in the store.
      errorStatuses: [429, 503],
      handler: async (req) => {
        await ipLimit.check(req.ip);
        const body = parse(req);
        if (!isValidEmail(body.email.trim())) {
          throw new ValidationFailure([valueError(['body', 'email'], 'value is not a valid email address', body.email)]);
        }
        if (body.website !== undefined && body.website !== null && body.website.trim() !== '') {
          return { status: 200, body: { ok: true, message: THANKS } };
        }
        // An email already on the list keeps its entry, and the answer is the same thank-you, so the
        // route neither lets anyone rewrite another's sign-up nor tells who has signed up.
        await deps.store.waitlist.add({
          email: body.email,
          company: body.company ?? null,
          use_case: body.use_case,
          consent: body.consent,
        });
        return { status: 200, body: { ok: true, message: THANKS } };
      },
    },
  ];
}
