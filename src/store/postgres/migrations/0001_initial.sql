-- Every kind of state the service keeps, shared by every node through one database. Secrets are
-- stored only as HMAC-SHA-256 hex under the server secret (ARBITRA_KEY_SECRET), which every node
-- holds; timestamps the service sets are timestamptz, values a client sent are kept as sent.

-- Facts the nodes must agree on, e.g. a check value of the server secret.
create table cluster_settings (
  name text primary key,
  value text not null
);

create table users (
  id text primary key,
  email text not null unique,
  name text,
  image text,
  created_at timestamptz not null,
  updated_at timestamptz not null
);

create table api_keys (
  id text primary key,
  user_id text not null references users (id),
  name text not null,
  prefix text not null,
  masked text not null,
  secret_hash text not null unique,
  created_at timestamptz not null,
  revoked_at timestamptz,
  last_used_at timestamptz
);
create index api_keys_by_user on api_keys (user_id, created_at);

-- Decisions admitted and refused per key per UTC day.
create table usage_day (
  key_id text not null,
  day date not null,
  requests integer not null default 0,
  rate_limited integer not null default 0,
  primary key (key_id, day)
);

-- Decisions admitted per user per UTC day and month (month: its first day), for quotas and caps.
create table user_day (
  user_id text not null,
  day date not null,
  decisions integer not null,
  primary key (user_id, day)
);
create table user_month (
  user_id text not null,
  month date not null,
  decisions integer not null,
  primary key (user_id, month)
);

-- The current one-second window per key.
create table rate_windows (
  key_id text primary key,
  second bigint not null,
  count integer not null
);

-- In-flight slots as leases: held by a node until released or until expires_at, which the node
-- pushes forward while the call runs; a dead node's leases lapse on their own.
create table in_flight (
  key_id text not null,
  slot_id text not null,
  node_id text not null,
  expires_at timestamptz not null,
  primary key (key_id, slot_id)
);
create index in_flight_by_node on in_flight (node_id);

-- The current one-minute window per client IP.
create table ip_windows (
  ip text primary key,
  minute bigint not null,
  count integer not null
);

create table balances (
  user_id text primary key,
  micro_eur bigint not null
);

create table idempotency (
  key_id text not null,
  idempotency_key text not null,
  body_hash text not null,
  status integer not null,
  response bytea not null,
  created_at timestamptz not null,
  primary key (key_id, idempotency_key)
);
create index idempotency_by_age on idempotency (created_at);

-- Retained requests; json, not jsonb, so a record reads back exactly as it was written.
create table retained_requests (
  key_id text not null,
  id text not null,
  record json not null,
  retention_until timestamptz not null,
  primary key (key_id, id)
);
create index retained_requests_by_expiry on retained_requests (retention_until);

create table waitlist (
  email text primary key,
  company text,
  use_case text not null,
  consent boolean not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);

create table traces (
  key_id text not null,
  request_id text not null,
  question text not null,
  record json not null,
  primary key (key_id, request_id, question)
);

create table verification_tokens (
  token_hash text primary key,
  user_id text not null references users (id),
  purpose text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz
);
create index verification_tokens_by_expiry on verification_tokens (expires_at);

-- Every fitted calibration, never overwritten: n counts up per model and layout.
create table calibrations (
  model_sha256 text not null,
  layout text not null,
  n integer not null,
  record json not null,
  primary key (model_sha256, layout, n)
);
