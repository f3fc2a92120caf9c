-- Bounds on what one API key can make the service keep (issue 50): idempotency entries are capped
-- per key and in all, which needs their count per key to be cheap and the total to be kept.

-- A key's own oldest entry, found without a scan, is the one its cap evicts.
create index idempotency_by_key_age on idempotency (key_id, created_at);

-- The number of idempotency entries of all keys, one row, changed with every insert and delete.
create table idempotency_total (
  only_row boolean primary key default true check (only_row),
  entries integer not null
);
insert into idempotency_total (entries) select count(*) from idempotency;
