// /console/session and /console/api/*: what the browser console needs beyond /v1/console/*. Sign-in
// trades the console token for a session cookie once; after that the page calls the console API
// with the cookie and its CSRF header (see src/api/console-session.ts), never with the token.
import { ApiError, ValidationFailure } from '../api/errors.js';
import { valueError } from '../decision/schema/problems.js';
import { consoleClosed, consoleIdentity, consoleSession, isValidEmail, sameSecret } from '../api/auth.js';
import { clearedCookie, sessionsFor, type ConsoleSession } from '../api/console-session.js';
import type { IpLimiter } from '../api/gate.js';
import type { SecretThrottle } from '../api/secret-throttle.js';
import { compileBodyParser } from '../api/validation.js';
import type { HttpRequest, HttpResponse, Route } from '../api/route.js';
import type { ModelCatalog } from '../api/routes/models.js';
import { promptCapacity, type EngineService } from '../engine/types.js';
import { KEY_PREFIX } from '../store/common.js';
import type { Store } from '../store/index.js';
import { ConsoleModelFacts, ConsoleSessionResponse, ConsoleSignIn } from './schemas.js';
import type { Static } from '@sinclair/typebox';

export interface ConsoleSessionDeps {
  store: Store;
  engine: EngineService;
  models: ModelCatalog;
  consoleToken?: string;
  /** Sign-in attempts count against the per-address request limit. */
  ipLimiter: IpLimiter;
  /** Wrong console tokens count against their address, on every route that takes the token. */
  secretThrottle: SecretThrottle;
}

function sessionBody(session: ConsoleSession): Static<typeof ConsoleSessionResponse> {
  return { email: session.email, csrf: session.csrf, expires_at: new Date(session.expiresAt).toISOString() };
}

/** The refusal of a wrong token; an API key in its place is named as such, because that is the usual mistake. */
function wrongToken(given: string): ApiError {
  const hint = given.startsWith(KEY_PREFIX)
    ? " That is an API key: the console opens with the operator's console token (ARBITRA_CONSOLE_TOKEN), never with an API key."
    : '';
  return new ApiError('authentication_error', `Invalid console token.${hint}`);
}

export function consoleSessionRoutes(deps: ConsoleSessionDeps): Route[] {
  const parseSignIn = compileBodyParser(ConsoleSignIn);
  const token = (): string => {
    if (deps.consoleToken === undefined || deps.consoleToken === '') throw consoleClosed();
    return deps.consoleToken;
  };
  const noStore = { 'cache-control': 'no-store' };
  const route = (r: Route): Route => ({ tag: 'console-web', errorStatuses: [503], ...r });

  return [
    route({
      method: 'POST',
      path: '/console/session',
      summary: 'Sign in to the browser console: the console token and a user email, exchanged for an HttpOnly session cookie.',
      schemas: { body: ConsoleSignIn, response: ConsoleSessionResponse },
      errorStatuses: [401, 429, 503],
      async handler(req) {
        const consoleToken = token();
        await deps.ipLimiter.check(req.ip);
        const body = parseSignIn(req);
        await deps.secretThrottle.check(
          req,
          'console',
          () => sameSecret(body.token, consoleToken) || null,
          () => wrongToken(body.token),
        );
        const email = body.email.trim().toLowerCase();
        if (!isValidEmail(email)) {
          throw new ValidationFailure([valueError(['body', 'email'], 'value is not a valid email address', body.email)]);
        }
        await deps.store.users.sync(email);
        const session = sessionsFor(consoleToken).issue(email, Date.now(), req.secure);
        return { status: 200, headers: { ...noStore, 'set-cookie': session.setCookie }, body: sessionBody(session) };
      },
    }),
    route({
      method: 'GET',
      path: '/console/session',
      summary: "The signed-in console user and the session's CSRF token; 401 when not signed in.",
      schemas: { response: ConsoleSessionResponse },
      errorStatuses: [401, 503],
      // No CSRF check: this is how the page learns the token after a reload, and another site's
      // page cannot read the answer (no CORS).
      handler: (req) => ({ status: 200, headers: noStore, body: sessionBody(consoleSession(req, token())) }),
    }),
    route({
      method: 'DELETE',
      path: '/console/session',
      summary: 'Sign out: the session cookie is cleared.',
      errorStatuses: [401, 403, 429, 503],
      async handler(req): Promise<HttpResponse> {
        await consoleIdentity(req, token(), deps.secretThrottle);
        return { status: 200, headers: { ...noStore, 'set-cookie': clearedCookie(req.secure) }, body: { signed_out: true } };
      },
    }),
    route({
      method: 'GET',
      path: '/console/api/model',
      summary: 'The served model and engine facts the console shows.',
      auth: 'console',
      schemas: { response: ConsoleModelFacts },
      async handler(req: HttpRequest) {
        await consoleIdentity(req, deps.consoleToken, deps.secretThrottle);
        const info = await deps.engine.info();
        const body: Static<typeof ConsoleModelFacts> = {
          id: deps.models.id,
          aliases: deps.models.names.filter((n) => n !== deps.models.id),
          description: info.description,
          architecture: info.architecture,
          parameters: info.parameters,
          quant_method: info.quantMethod,
          quant_bits: info.quantBits,
          context_tokens: promptCapacity(info),
          backend: info.backend,
          gpu_memory_mb: info.gpuMemoryMb,
          file_size: info.fileSize,
          file_modified: info.fileModified,
          llama_build: info.llamaBuild,
          threads: info.threads,
          prompt_frame: info.promptFrame,
        };
        return { status: 200, body };
      },
    }),
  ];
}
