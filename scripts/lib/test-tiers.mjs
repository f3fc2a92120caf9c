// The tiers of the suite, chosen by what each test file imports: a file is slow when it reaches,
// through its own imports within test/, a helper that starts a model, a server, a PostgreSQL server
// or a browser; every other file is fast. A file that runs podman containers, or the device
// pipeline on the CPU, is in a tier of its own, which only `npm run test:container` or
// `npm run test:device` runs. A new test falls in the right tier by what it uses, with no list to keep.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { importsOf } from './import-graph.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Helpers that start what the fast tier leaves out, and what each starts. */
const SLOW_HELPERS = {
  'test/integration/helpers/server.ts': 'a server with a model',
  'test/helpers/models.ts': 'a model',
  'test/helpers/postgres.ts': 'a PostgreSQL server',
  'test/console-web/browser.ts': 'a browser',
  'test/container/podman.ts': 'podman containers',
  'test/device/pipeline.ts': 'the device pipeline',
};
/** Reaches PostgreSQL only to run a contract on it beside LMDB; the fast tier runs it on LMDB alone. */
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

/** What a file starts, through the helpers it reaches: none for a fast file. */
function starts(file, seen = new Set()) {
  if (SLOW_HELPERS[file]) return [SLOW_HELPERS[file]];
  seen.add(file);
  const found = new Set();
  for (const dep of localImports(file)) {
    if (seen.has(dep) || dep === BOTH_BACKENDS) continue;
    for (const what of starts(dep, seen)) found.add(what);
  }
  return [...found];
}

/** Every test file with what it starts (empty when it is fast), in tap's order. */
export function tiers() {
  return new Map(
    testFiles('test')
      .sort()
      .map((file) => [file, starts(file)]),
  );
}

/** Starts a PostgreSQL server and nothing else: no model's threads, so it runs beside others. */
export const onlyPostgres = (what) => what.length > 0 && what.every((w) => w === SLOW_HELPERS['test/helpers/postgres.ts']);

/**
 * Tiers `npm test` leaves out, each run by its own script: built images and podman, minutes each
 * (`npm run test:container`); the device pipeline's CPU build and run, tens of minutes
 * (`npm run test:device`).
 */
const OWN_TIERS = { container: SLOW_HELPERS['test/container/podman.ts'], device: SLOW_HELPERS['test/device/pipeline.ts'] };

/** The tier of its own a file belongs to, or undefined. */
export const ownTier = (what) => Object.keys(OWN_TIERS).find((tier) => what.includes(OWN_TIERS[tier]));

/** A file's tier as `scripts/run-tests.mjs --list` names it. */
export const tierOf = (what) => ownTier(what) ?? (what.length > 0 ? 'slow' : 'fast');
