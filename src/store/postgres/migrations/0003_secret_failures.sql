-- Failed secrets per scope (what was guessed, from which address block) in the current fixed
-- window, for the guessing throttle. window_end is epoch milliseconds; a row whose window has ended
-- counts as 0 and is cleared by a later failure (see counters.ts), so rows never pile up.
create table secret_failures (
  scope text primary key,
  window_end bigint not null,
  count integer not null
);
create index secret_failures_by_end on secret_failures (window_end);
