// /v1/console/*: user sync, API keys, account, usage and verification tokens. Every handler first
// establishes the console identity (operator token + user email), then validates its body.
import { Type, type TSchema, type Static } from '@sinclair/typebox';
import { ApiError, ValidationFailure } from '../api/errors.js';
import { consoleIdentity } from '../api/auth.js';
import type { SecretThrottle } from '../api/secret-throttle.js';
import { PathId } from '../api/schemas/common.js';
import { parseJsonBody } from '../api/json-body.js';
import { applyDefaults, compileBodyParser, compileParamsParser, compileValidator, dropUnknownMembers } from '../api/validation.js';
import type { HttpRequest, Route } from '../api/route.js';
import type { LimitsConfig } from '../limits/config.js';
import { KeyLimitError, type Store } from '../store/index.js';
import { utcMonth } from '../store/clock.js';
import type { ApiKeyRecord } from '../store/types.js';
import {
  AccountSummaryResponse,
  ApiKeyCreate,
  ApiKeyCreateResponse,
  ApiKeyListResponse,
  ApiKeyRevokeResponse,
  ConsoleUserSync,
  ConsoleUserSyncResponse,
  UsageListResponse,
  VerificationTokenCreate,
  VerificationTokenCreateResponse,
  VerificationTokenUse,
  VerificationTokenUseResponse,
  type ApiKeyListItemT,
} from './schemas.js';

export interface ConsoleDeps {
  store: Store;
  limits: LimitsConfig;
  /** ARBITRA_CONSOLE_TOKEN; when unset every console route answers 503. */
  consoleToken?: string;
  /** Wrong console tokens count against their address. */
  secretThrottle: SecretThrottle;
}

/**
 * A body parser for console bodies whose members are all optional: an empty body reads as {}.
 * Compiled once per schema.
 */
function optionalBody<T extends TSchema>(schema: T): (req: HttpRequest) => Static<T> {
  const validate = compileValidator(schema);
  return (req) => {
    const raw = parseJsonBody(req, { optional: true }) ?? {};
    const value = applyDefaults(schema, raw);
    const errors = validate(value);
    if (errors.length > 0) throw new ValidationFailure(errors);
    return dropUnknownMembers(schema, value);
  };
}

const KeyParams = Type.Object({ key_id: PathId });

export function consoleRoutes(deps: ConsoleDeps): Route[] {
  const { store, limits } = deps;
  const identify = (req: HttpRequest) => consoleIdentity(req, deps.consoleToken, deps.secretThrottle);
  const parseSync = optionalBody(ConsoleUserSync);
  const parseKeyCreate = optionalBody(ApiKeyCreate);
  const parseTokenCreate = optionalBody(VerificationTokenCreate);
  const parseTokenUse = compileBodyParser(VerificationTokenUse);
  const parseKeyParams = compileParamsParser(KeyParams);

  async function listItem(k: ApiKeyRecord, month: string): Promise<ApiKeyListItemT> {
    return {
      id: k.id,
      name: k.name,
      prefix: k.prefix,
      masked: k.masked,
      created_at: k.created_at,
      revoked_at: k.revoked_at,
      last_used_at: k.last_used_at,
      month_requests: await store.counters.keyMonthRequests(k.id, month),
    };
  }

  const listItems = (keys: ApiKeyRecord[], month: string) => Promise.all(keys.map((k) => listItem(k, month)));

  const route = (r: Route): Route => ({ auth: 'console', tag: 'console', ...r });

  return [
    route({
      method: 'POST',
      path: '/v1/console/users/sync',
      summary: 'Create or update the console user (name, image); returns a stable user_id.',
      schemas: { body: ConsoleUserSync, response: ConsoleUserSyncResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const body = parseSync(req);
        const user = await store.users.sync(email, { name: body.name, image: body.image });
        return { status: 200, body: { user_id: user.id, email: user.email, name: user.name, image: user.image } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/console/api-keys',
      summary: "List the user's API keys (prefix and masked form only, never the secret).",
      schemas: { response: ApiKeyListResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const month = utcMonth(Date.now());
        return { status: 200, body: { keys: await listItems(await store.keys.list(email), month) } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/console/api-keys',
      summary:
        'Create an API key; the full secret is returned once, in this response only. A key past the active keys a user may hold (100 by default) is a 409.',
      errorStatuses: [409],
      schemas: { body: ApiKeyCreate, response: ApiKeyCreateResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const body = parseKeyCreate(req);
        const { record, secret } = await store.keys.create(email, body.name).catch((err: unknown) => {
          if (!(err instanceof KeyLimitError)) throw err;
          throw new ApiError('conflict', `A user may hold at most ${err.limit} active API keys; revoke one before creating another.`, {
            max_keys_per_user: err.limit,
          });
        });
        return {
          status: 200,
          headers: { 'cache-control': 'no-store' },
          body: {
            id: record.id,
            name: record.name,
            prefix: record.prefix,
            masked: record.masked,
            key: secret,
            created_at: record.created_at,
          },
        };
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/console/api-keys/{key_id}',
      summary: 'Revoke an API key at once; the next request with it, on any worker, is 401.',
      schemas: { response: ApiKeyRevokeResponse, params: KeyParams },
      handler: async (req) => {
        const { email } = await identify(req);
        const { key_id: id } = parseKeyParams(req);
        const revoked = await store.keys.revoke(id, email);
        if (!revoked || revoked.revoked_at === null) {
          throw new ApiError('not_found', `No API key with id ${JSON.stringify(id)} for this user.`);
        }
        return { status: 200, body: { id: revoked.id, revoked: true, revoked_at: revoked.revoked_at } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/console/account',
      summary: 'Plan, this UTC month, decisions this month, monthly cap and keys.',
      schemas: { response: AccountSummaryResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const now = Date.now();
        const month = utcMonth(now);
        const user = await store.users.getByEmail(email);
        const keys = await listItems(await store.keys.list(email), month);
        const body: Static<typeof AccountSummaryResponse> = {
          plan: 'Free',
          month,
          total_requests: user ? await store.counters.userMonthRequests(user.id, month) : 0,
          monthly_cap: limits.monthlyCap,
          keys,
        };
        if (limits.billing) {
          const micro = user ? await store.counters.balanceMicro(user.id, limits.startingBalanceEur) : limits.startingBalanceEur * 1e6;
          body.balance_eur = (micro / 1e6).toFixed(6);
        }
        return { status: 200, body };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/console/usage',
      summary: 'One row per key per UTC day: decisions admitted and refused by rate limits or quotas.',
      schemas: { response: UsageListResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const keys = await store.keys.list(email);
        const byId = new Map(keys.map((k) => [k.id, k]));
        const rows = (await store.counters.usageRows(keys.map((k) => k.id))).map((r) => {
          const k = byId.get(r.key_id)!;
          return { key_id: r.key_id, name: k.name, prefix: k.prefix, day: r.day, requests: r.requests, rate_limited: r.rate_limited };
        });
        return { status: 200, body: { rows } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/console/verification-tokens',
      summary: 'Issue a single-use verification token for the user (stored hashed, expires).',
      schemas: { body: VerificationTokenCreate, response: VerificationTokenCreateResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const body = parseTokenCreate(req);
        const user = await store.users.sync(email);
        const { token, record } = await store.verificationTokens.issue(user, body.purpose, limits.verificationTokenTtlSeconds);
        return {
          status: 200,
          headers: { 'cache-control': 'no-store' },
          body: {
            token,
            purpose: record.purpose,
            email: record.email,
            user_id: record.user_id,
            created_at: record.created_at,
            expires_at: record.expires_at,
          },
        };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/console/verification-tokens/use',
      summary: 'Consume a verification token of this user: 404 unknown, 409 already used, 410 expired.',
      errorStatuses: [404, 409, 410],
      schemas: { body: VerificationTokenUse, response: VerificationTokenUseResponse },
      handler: async (req) => {
        const { email } = await identify(req);
        const body = parseTokenUse(req);
        const result = await store.verificationTokens.use(body.token, email);
        switch (result.status) {
          case 'ok':
            return {
              status: 200,
              body: {
                ok: true,
                email: result.record.email,
                user_id: result.record.user_id,
                purpose: result.record.purpose,
                used_at: result.record.used_at,
              },
            };
          case 'not_found':
            throw new ApiError('not_found', 'Unknown verification token for this user.');
          case 'used':
            throw new ApiError('conflict', 'This verification token has already been used.');
          case 'expired':
            throw new ApiError('gone', 'This verification token has expired; issue a new one.');
        }
      },
    }),
  ];
}
