#!/usr/bin/env node
// Before the suite: the small catalogue models the tests run on, pulled like any operator would
// (`arbitra models pull`, resumable and checksum-verified). The default model came with npm install.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'src', 'cli', 'main.js');
for (const name of ['gemma-3-270m', 'smollm2-135m']) {
  execFileSync(process.execPath, [cli, 'models', 'pull', name], { stdio: ['ignore', 'ignore', 'inherit'] });
}
