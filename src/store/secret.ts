// The server secret that keys every stored hash (API keys, verification tokens, pseudonyms).
// Created once in the data dir with mode 0600, or taken from ARBITRA_KEY_SECRET; the same secret
// is read by every process that opens the dir, so hashes agree across workers and the CLI.
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SECRET_FILE = 'server-secret';

export function loadServerSecret(dataDir: string, fromEnv?: string): Buffer {
  if (fromEnv !== undefined && fromEnv !== '') {
    if (fromEnv.length < 32) throw new Error('ARBITRA_KEY_SECRET must be at least 32 characters');
    return Buffer.from(fromEnv, 'utf8');
  }
  const path = join(dataDir, SECRET_FILE);
  try {
    // 'wx' fails when the file exists, so two processes opening a fresh dir agree on one secret.
    writeFileSync(path, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  let text = readFileSync(path, 'utf8').trim();
  // Another process may have created the file but not yet written it.
  for (let i = 0; text === '' && i < 50; i++) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    text = readFileSync(path, 'utf8').trim();
  }
  if (text.length < 32) throw new Error(`server secret in ${path} is missing or too short`);
  return Buffer.from(text, 'utf8');
}

export type Hasher = (purpose: string, value: string) => string;

/** HMAC-SHA-256 keyed by the server secret; the purpose separates the hash spaces. */
export function makeHasher(secret: Buffer): Hasher {
  return (purpose, value) => createHmac('sha256', secret).update(`${purpose}\0${value}`).digest('hex');
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** n random base62 characters (rejection sampling keeps them uniform). */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out += BASE62[b % 62];
    }
  }
  return out;
}
