// TypeBox schemas of the console resources (spec section 2, "Console resources"), plus the
// verification-token bodies the spec leaves open. The schema is the type.
import { Type, type Static } from '@sinclair/typebox';

export const ConsoleUserSync = Type.Object({
  name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  image: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
});

export const ConsoleUserSyncResponse = Type.Object({
  user_id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  image: Type.Union([Type.String(), Type.Null()]),
});

export const ApiKeyCreate = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, default: 'Default' }),
});

export const ApiKeyCreateResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'Readable start of the key, shown in lists.' }),
  masked: Type.String(),
  key: Type.String({ description: 'The full secret. Returned only here, at creation; store it now.' }),
  created_at: Type.String(),
});

export const ApiKeyListItem = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  masked: Type.String(),
  created_at: Type.String(),
  revoked_at: Type.Union([Type.String(), Type.Null()]),
  last_used_at: Type.Union([Type.String(), Type.Null()]),
  month_requests: Type.Integer({ default: 0 }),
});

export const ApiKeyListResponse = Type.Object({ keys: Type.Array(ApiKeyListItem) });

export const ApiKeyRevokeResponse = Type.Object({
  id: Type.String(),
  revoked: Type.Literal(true),
  revoked_at: Type.String(),
});

export const AccountSummaryResponse = Type.Object({
  plan: Type.String({ default: 'Free' }),
  month: Type.String({ description: 'The current UTC month, YYYY-MM.' }),
  total_requests: Type.Integer({ description: 'Decisions admitted for this user in the month, over all keys.' }),
  monthly_cap: Type.Integer({
    minimum: 0,
    description: 'Decisions a user may make per UTC month (ARBITRA_MONTHLY_CAP); 0 means no cap, the self-hosted default.',
  }),
  keys: Type.Array(ApiKeyListItem),
  balance_eur: Type.Optional(Type.String({ description: 'Present when billing is on; six decimals.' })),
});

export const UsageRow = Type.Object({
  key_id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  day: Type.Union([Type.String(), Type.Null()], { description: 'UTC day, YYYY-MM-DD.' }),
  requests: Type.Integer({ default: 0, description: 'Decisions admitted.' }),
  rate_limited: Type.Integer({ default: 0, description: 'Decisions refused with 429 (rate_limited or quota_exceeded).' }),
});

export const UsageListResponse = Type.Object({ rows: Type.Array(UsageRow) });

export const VerificationTokenCreate = Type.Object({
  purpose: Type.String({
    minLength: 1,
    maxLength: 64,
    default: 'email_verification',
    description: 'Free label stored with the token and echoed when it is used.',
  }),
});

export const VerificationTokenCreateResponse = Type.Object({
  token: Type.String({ description: 'Single-use secret ("avt_" + 43 characters); stored only hashed.' }),
  purpose: Type.String(),
  email: Type.String(),
  user_id: Type.String(),
  created_at: Type.String(),
  expires_at: Type.String(),
});

export const VerificationTokenUse = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200 }),
});

export const VerificationTokenUseResponse = Type.Object({
  ok: Type.Literal(true),
  email: Type.String(),
  user_id: Type.String(),
  purpose: Type.String(),
  used_at: Type.String(),
});

export type ApiKeyListItemT = Static<typeof ApiKeyListItem>;

export const ConsoleSignIn = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 1024, description: "The operator's console token (ARBITRA_CONSOLE_TOKEN)." }),
  email: Type.String({ minLength: 3, maxLength: 254, description: 'The console user to act as.' }),
});

export const ConsoleSessionResponse = Type.Object({
  email: Type.String(),
  csrf: Type.String({ description: 'Send as X-Arbitra-CSRF on every console request made with the session cookie.' }),
  expires_at: Type.String({ format: 'date-time' }),
});

export const ConsoleModelFacts = Type.Object({
  id: Type.String(),
  aliases: Type.Array(Type.String()),
  description: Type.String(),
  architecture: Type.String(),
  parameters: Type.Integer(),
  quant_method: Type.String(),
  quant_bits: Type.Union([Type.Integer(), Type.Null()]),
  context_tokens: Type.Integer({ description: 'The longest prompt the engine takes.' }),
  backend: Type.String(),
  gpu_memory_mb: Type.Union([Type.Integer(), Type.Null()]),
  file_size: Type.Integer(),
  file_modified: Type.String(),
  llama_build: Type.String(),
  threads: Type.Integer(),
  prompt_frame: Type.String(),
});
