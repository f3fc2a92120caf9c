#!/usr/bin/env node
// What the suite needs inside this checkout, beside node_modules: the small test models (models/)
// and the pinned Python tools (.venv-sdk/, .venv-fuzz/, .venv-format/). `npm install` prepares them
// on a development install, as it installs the devDependencies; `npm test` runs this again, which
// costs nothing when everything is current and finishes the job when the install could not.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const scripts = path.dirname(fileURLToPath(import.meta.url));
for (const [script, ...args] of [['test-models.mjs'], ['python-sdk.mjs'], ['fuzz-env.mjs'], ['clang-format.mjs', '--install']]) {
  execFileSync(process.execPath, [path.join(scripts, script), ...args], { stdio: 'inherit' });
}
