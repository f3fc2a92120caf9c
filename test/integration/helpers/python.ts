// The test tools that run on Python (TypeSafe's client, the jevcompat conformance suite) live in
// .venv-sdk/, built from test/integration/python/requirements.txt by scripts/python-sdk.mjs,
// which `npm test` runs before tap.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../../', import.meta.url));
export const PYTHON = path.join(root, '.venv-sdk', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');

/**
 * Why the environment cannot run, or null. Not a reason to skip: the environment is part of the
 * test setup, so its absence is a broken setup and the test fails with this.
 */
export function venvMissing(): string | null {
  return fs.existsSync(PYTHON) ? null : `${path.relative(root, PYTHON)} is missing: run node scripts/python-sdk.mjs (npm test runs it before tap)`;
}

/** The caller's environment without TYPESAFE_* variables, so a run is the same on every machine. */
export function withoutTypesafeEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TYPESAFE_')));
}
