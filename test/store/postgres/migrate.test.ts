// Migrations against a real PostgreSQL: several nodes starting at once apply each migration exactly
// once, a second start applies nothing, and a database the code does not match is refused.
import t from 'tap';
import pg from 'pg';
import { loadMigrations, migrate, SchemaError, type Migration } from '../../../src/store/postgres/migrate.js';
import { postgresFor } from '../../helpers/postgres.js';

const server = await postgresFor(t);

const m1: Migration = { version: 1, name: 'one', sql: 'create table one (n int);' };
const m2: Migration = { version: 2, name: 'two', sql: 'create table two (n int);' };

t.test('the shipped migrations are numbered from 1 and read from the package', async (t) => {
  const shipped = loadMigrations();
  t.ok(shipped.length >= 1);
  t.same(
    shipped.map((m) => m.version),
    shipped.map((_, i) => i + 1),
  );
  t.equal(shipped[0]?.name, 'initial');
});

t.test('loadMigrations refuses gaps and stray names', async (t) => {
  const gap = t.testdir({ '0001_a.sql': 'select 1;', '0003_c.sql': 'select 1;' });
  t.throws(() => loadMigrations(gap), /without gaps; found 3 at place 2/);
  const stray = t.testdir({ '0001_a.sql': 'select 1;', '2_b.sql': 'select 1;' });
  t.throws(() => loadMigrations(stray), /2_b\.sql .* not named NNNN_name\.sql/);
  const fine = t.testdir({ '0002_b.sql': 'b', '0001_a.sql': 'a', README: 'not a migration' });
  t.same(loadMigrations(fine), [
    { version: 1, name: 'a', sql: 'a' },
    { version: 2, name: 'b', sql: 'b' },
  ]);
});

if (server) {
  const pools: pg.Pool[] = [];
  const poolFor = (url: string) => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pools.push(pool);
    return pool;
  };
  t.teardown(() => Promise.all(pools.map((p) => p.end())));

  t.test('four nodes migrating one fresh database at once apply each migration once', async (t) => {
    const url = await server.freshDatabase();
    const shipped = loadMigrations();
    const nodes = Array.from({ length: 4 }, () => poolFor(url));
    const applied = await Promise.all(nodes.map((pool) => migrate(pool)));
    t.same(
      applied.flat().sort((a, b) => a - b),
      shipped.map((m) => m.version),
      'every version applied by exactly one node',
    );
    t.equal(applied.filter((a) => a.length > 0).length, 1, 'one node did all the work');
    const { rows } = await nodes[0]!.query('select version, name from schema_migrations order by version');
    t.same(
      rows,
      shipped.map((m) => ({ version: m.version, name: m.name })),
    );
    t.same(await Promise.all(nodes.map((pool) => migrate(pool))), [[], [], [], []], 'a second start applies nothing');

    const tables = await nodes[0]!.query<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = 'public' order by table_name",
    );
    t.same(
      tables.rows.map((r) => r.table_name),
      [
        'api_keys',
        'balances',
        'calibrations',
        'cluster_settings',
        'idempotency',
        'idempotency_total',
        'in_flight',
        'ip_windows',
        'rate_windows',
        'retained_requests',
        'schema_migrations',
        'secret_failures',
        'trace_usage',
        'traces',
        'usage_day',
        'user_day',
        'user_month',
        'users',
        'verification_tokens',
        'waitlist',
      ],
      'a table for every kind of state',
    );
  });

  t.test('only pending migrations run', async (t) => {
    const pool = poolFor(await server.freshDatabase());
    t.same(await migrate(pool, [m1]), [1]);
    t.same(await migrate(pool, [m1, m2]), [2]);
    t.same((await pool.query('select count(*)::int as n from two')).rows, [{ n: 0 }], 'the new table exists');
  });

  t.test('a database newer than the code is refused, and left as it was', async (t) => {
    const pool = poolFor(await server.freshDatabase());
    await migrate(pool, [m1, m2]);
    await t.rejects(migrate(pool, [m1]), { name: 'SchemaError', message: /schema is at version 2 \(two\), newer than this arbitra knows \(1\)/ });
    t.same((await pool.query('select count(*)::int as n from schema_migrations')).rows, [{ n: 2 }]);
  });

  t.test('an applied migration whose text changed is refused', async (t) => {
    const pool = poolFor(await server.freshDatabase());
    await migrate(pool, [m1]);
    const err = await migrate(pool, [{ ...m1, sql: 'create table one (n bigint);' }, m2]).catch((e: unknown) => e);
    t.type(err, SchemaError);
    t.match((err as Error).message, /migration 1 \(one\) was applied with a different text/);
    await t.rejects(pool.query('select * from two'), { code: '42P01' }, 'nothing after it ran');
  });

  t.test('a failing migration rolls back every migration of that start', async (t) => {
    const pool = poolFor(await server.freshDatabase());
    const bad: Migration = { version: 2, name: 'bad', sql: 'create table two (n int); select no_such_function();' };
    await t.rejects(migrate(pool, [m1, bad]), { code: '42883' });
    await t.rejects(pool.query('select * from one'), { code: '42P01' }, 'the first migration is rolled back too');
    await t.rejects(pool.query('select * from schema_migrations'), { code: '42P01' }, 'and nothing is recorded');
    t.same(await migrate(pool, [m1, m2]), [1, 2], 'a fixed release applies both');
  });
}
