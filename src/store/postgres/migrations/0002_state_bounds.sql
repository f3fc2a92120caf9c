-- Bounds on what one API key can make the service keep (issue 50): traces lapse with the decision
-- they are about and count against their key's quota; idempotency entries are capped per key and
-- in all, which needs their count per key to be cheap and the total to be kept.

-- A trace's size as counted against the quota (its record's JSON) and when the purge removes it.
alter table traces add column bytes integer;
alter table traces add column expires_at timestamptz;
update traces set bytes = octet_length(record::text);
update traces t set expires_at = r.retention_until from retained_requests r where r.key_id = t.key_id and r.id = t.request_id;
-- Traces whose decision is gone are of no use to calibration; they get the default retention
-- period from the upgrade instead of going at the first purge (TRACE_UPGRADE_GRACE_MS).
update traces set expires_at = now() + interval '30 days' where expires_at is null;
alter table traces alter column bytes set not null, alter column expires_at set not null;
create index traces_by_expiry on traces (expires_at);

-- What each key's traces hold, checked and changed in the transaction that adds or removes them.
create table trace_usage (
  key_id text primary key,
  traces integer not null,
  bytes bigint not null
);
insert into trace_usage (key_id, traces, bytes) select key_id, count(*), sum(bytes) from traces group by key_id;

-- A key's own oldest entry, found without a scan, is the one its cap evicts.
create index idempotency_by_key_age on idempotency (key_id, created_at);

-- The number of idempotency entries of all keys, one row, changed with every insert and delete.
create table idempotency_total (
  only_row boolean primary key default true check (only_row),
  entries integer not null
);
insert into idempotency_total (entries) select count(*) from idempotency;
