#!/usr/bin/env node
// `npm run test:fast`: the tests that need no model, no server and no browser, for the edit-test
// loop. A test file belongs here unless it reaches, through its own imports within test/, a helper
// that starts one of those; so a new test falls in the right tier by what it uses, with no list to
// keep. The store, gate and console contracts (written over both backends) run on LMDB alone here;
// `npm test` runs everything, PostgreSQL included. Extra arguments go to tap.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { importsOf } from './lib/import-graph.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Helpers that start what the fast tier leaves out, and what each starts. */
const SLOW_HELPERS = {
  'test/integration/helpers/server.ts': 'a server with a model',
  'test/helpers/models.ts': 'a model',
  'test/helpers/postgres.ts': 'a PostgreSQL server',
  'test/console-web/browser.ts': 'a browser',
};
/** Reaches PostgreSQL only to run a contract on it beside LMDB, which the fast tier skips. */
const BOTH_BACKENDS = 'test/helpers/backends.ts';

function testFiles(dir) {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testFiles(rel);
    return rel.endsWith('.test.ts') ? [rel] : [];
  });
}

/** The test-local modules a file imports (the bench and source modules start nothing of these). */
const localImports = (file) =>
  importsOf(root, [file])
    .map((edge) => edge.to)
    .filter((dep) => dep.startsWith('test/'));

/** Why a file is not fast (what it starts), or null. */
function slowBecause(file, seen = new Set()) {
  if (SLOW_HELPERS[file]) return SLOW_HELPERS[file];
  seen.add(file);
  for (const dep of localImports(file)) {
    if (seen.has(dep) || dep === BOTH_BACKENDS) continue;
    const why = slowBecause(dep, seen);
    if (why) return why;
  }
  return null;
}

const files = testFiles('test');
const why = new Map(files.map((file) => [file, slowBecause(file)]));
const fast = files.filter((file) => !why.get(file));
if (process.argv.includes('--list')) {
  for (const file of files) console.log(`${why.get(file) ? 'slow' : 'fast'}  ${file}${why.get(file) ? ` (${why.get(file)})` : ''}`);
  process.exit(0);
}
console.log(`test:fast: ${fast.length} of ${files.length} test files (the others start a model, a server or a browser: npm test runs them)`);
const tap = spawnSync(process.execPath, [path.join(root, 'node_modules/tap/dist/esm/run.mjs'), '--jobs=2', ...process.argv.slice(2), ...fast], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, ARBITRA_TEST_BACKENDS: 'lmdb' },
});
process.exit(tap.status ?? 1);
