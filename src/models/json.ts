// The small JSON files beside model files (a partial download's description, a lock's holder, a
// pulled model's record): read as null when missing or torn, never as an error.
import fs from 'node:fs';

export function readJson<T>(file: string): T | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}
