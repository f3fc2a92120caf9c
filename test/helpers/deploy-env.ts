// The KEY=VALUE lines of an env file under deploy/, comments skipped, as a service manager reads them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const deploy = fileURLToPath(new URL('../../deploy/', import.meta.url));

export function deployEnv(file: string): Record<string, string> {
  return Object.fromEntries(
    fs
      .readFileSync(path.join(deploy, file), 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.trimStart().startsWith('#'))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}
