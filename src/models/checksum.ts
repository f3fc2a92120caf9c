// A model file's sha256, computed once and remembered in a stamp beside it (`<file>.sha256`:
// digest, size and mtime), so a restart does not hash a gigabyte again. Calibrations are bound to
// this digest, so they never apply to another model that happens to share a file name.
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';

export async function sha256File(file: string): Promise<string> {
  return (await hashFileInto(createHash('sha256'), file)).digest('hex');
}

/** Feeds a file's bytes to a running hash (a resumed download hashes what it already has). */
export async function hashFileInto(hash: Hash, file: string): Promise<Hash> {
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash;
}

function stampLine(file: string, sha256: string): string {
  const st = fs.statSync(file);
  return `${sha256} ${st.size} ${st.mtimeMs}`;
}

function readStamp(file: string): string | null {
  try {
    return fs.readFileSync(`${file}.sha256`, 'utf8');
  } catch {
    return null;
  }
}

/** Records that `file`, as it is now, has this digest; a read-only folder just skips the stamp. */
export function stampVerified(file: string, sha256: string): void {
  try {
    fs.writeFileSync(`${file}.sha256`, stampLine(file, sha256));
  } catch {
    // the digest is recomputed next time
  }
}

/** True when the stamp says `file`, unchanged since it was stamped, has this digest. */
export function isVerified(file: string, sha256: string): boolean {
  return fs.existsSync(file) && readStamp(file) === stampLine(file, sha256);
}

/** The file's digest, from its stamp when the file has not changed since. */
export async function modelChecksum(file: string): Promise<string> {
  const stamp = readStamp(file);
  const digest = stamp?.split(' ')[0];
  if (digest && stamp === stampLine(file, digest)) return digest;
  const computed = await sha256File(file);
  stampVerified(file, computed);
  return computed;
}
