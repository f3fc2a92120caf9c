// Schema migrations of the PostgreSQL store: numbered .sql files shipped in migrations/ next to this
// module's source (read at run time from the package, not from dist/), applied at start.
//
// All pending migrations run in one transaction that first takes a transaction-scoped advisory lock,
// so when several nodes start at once one applies them and the others, once the lock is theirs,
// find nothing left to do. PostgreSQL's DDL is transactional: a failed migration leaves the schema
// as it was. Each applied migration is recorded in schema_migrations with a checksum of its text.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { packageRoot } from '../../paths.js';
import { checkout } from './db.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** In the source tree, which ships with the package: tsc does not copy .sql files into dist/. */
export const MIGRATIONS_DIR = path.join(packageRoot(), 'src', 'store', 'postgres', 'migrations');

/** Any fixed number, the same in every node: it names the lock that serialises migrators. */
const MIGRATION_LOCK = 0x61726269747261n; // "arbitra"

const FILE_RE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** The database is unfit for this code: newer than it knows, or an applied migration was changed. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const migrations: Migration[] = [];
  for (const file of fs.readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = FILE_RE.exec(file);
    if (!m) throw new Error(`migration ${file} in ${dir} is not named NNNN_name.sql`);
    migrations.push({ version: Number(m[1]), name: m[2]!, sql: fs.readFileSync(path.join(dir, file), 'utf8') });
  }
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations in ${dir} must be numbered 1, 2, 3… without gaps; found ${m.version} at place ${i + 1}`);
  });
  return migrations;
}

function checksum(sql: string): string {
  return createHash('sha256').update(sql).digest('hex');
}

/** Applies what is pending; returns the versions this call applied (none when another node did). */
export async function migrate(pool: pg.Pool, migrations: Migration[] = loadMigrations()): Promise<number[]> {
  const { client, done } = await checkout(pool);
  let failed: unknown;
  try {
    await client.query('begin');
    await client.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK.toString()]);
    await client.query(`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`);
    const { rows } = await client.query<{ version: number; name: string; checksum: string }>(
      'select version, name, checksum from schema_migrations order by version',
    );
    const known = migrations.length;
    const newest = rows.at(-1)?.version ?? 0;
    if (newest > known) {
      throw new SchemaError(
        `the database schema is at version ${newest} (${rows.at(-1)!.name}), newer than this arbitra knows (${known}); upgrade arbitra on this node, or point it at another database`,
      );
    }
    for (const row of rows) {
      const ours = migrations[row.version - 1]!;
      if (checksum(ours.sql) !== row.checksum) {
        throw new SchemaError(
          `migration ${row.version} (${row.name}) was applied with a different text than this arbitra ships; the database and the code disagree about the schema`,
        );
      }
    }
    const applied: number[] = [];
    for (const m of migrations.slice(newest)) {
      await client.query(m.sql);
      await client.query('insert into schema_migrations (version, name, checksum) values ($1, $2, $3)', [m.version, m.name, checksum(m.sql)]);
      applied.push(m.version);
    }
    await client.query('commit');
    return applied;
  } catch (err) {
    await client.query('rollback').catch((rollbackErr: unknown) => (failed = rollbackErr));
    throw err;
  } finally {
    done(failed);
  }
}
