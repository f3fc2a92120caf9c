// The test PostgreSQL server is a real one: it answers queries, and a write committed through one
// connection is seen through another, as two nodes sharing it would see each other's writes.
import t from 'tap';
import pg from 'pg';
import { postgresFor } from './postgres.js';

const server = await postgresFor(t);

if (server) {
  t.test('select 1', async (t) => {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    t.teardown(() => client.end());
    const { rows } = await client.query<{ one: number; version: string }>('select 1 as one, version() as version');
    t.equal(rows[0]?.one, 1);
    t.match(rows[0]?.version, /^PostgreSQL \d+/);
  });

  t.test('two clients of a fresh database see each other’s writes', async (t) => {
    const url = await server.freshDatabase();
    t.not(url, server.url, 'a database apart from the default one');
    const a = new pg.Client({ connectionString: url });
    const b = new pg.Client({ connectionString: url });
    await Promise.all([a.connect(), b.connect()]);
    t.teardown(() => Promise.all([a.end(), b.end()]));
    await a.query('create table shared (n int primary key)');
    await a.query('insert into shared values (1)');
    t.same((await b.query('select n from shared')).rows, [{ n: 1 }], 'b reads what a committed');
    await b.query('update shared set n = 2');
    t.same((await a.query('select n from shared')).rows, [{ n: 2 }], 'a reads what b committed');
    const other = await server.freshDatabase();
    t.not(other, url, 'each call gives a new database');
    const c = new pg.Client({ connectionString: other });
    await c.connect();
    t.teardown(() => c.end());
    await t.rejects(c.query('select n from shared'), { code: '42P01' }, 'the table is not in another fresh database');
  });
}
