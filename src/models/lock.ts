// An exclusive lock file, so that two pulls of one model never write the same files: the second
// waits for the first and then finds the model there. A lock whose process is gone (killed, power
// cut) is stale and taken over.
import fs from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { readJson } from './json.js';

interface Holder {
  pid: number;
  host: string;
}

function alive(holder: Holder): boolean {
  if (holder.host !== os.hostname()) return true; // another machine's process: assume it runs
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function tryTake(file: string): boolean {
  try {
    fs.writeFileSync(file, JSON.stringify({ pid: process.pid, host: os.hostname() }), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/**
 * Runs `fn` holding the lock `file`. While another live process (or another pull in this one)
 * holds it, waits, saying once whom it waits for; gives up after `timeoutMs`.
 */
export async function withLock<T>(
  file: string,
  fn: () => Promise<T>,
  opts: { log?: (line: string) => void; timeoutMs?: number; pollMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? Infinity);
  let told = false;
  while (!tryTake(file)) {
    const holder = readJson<Holder>(file);
    if (holder && !alive(holder)) {
      fs.rmSync(file, { force: true }); // stale: its process is gone
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another pull holds ${file} (pid ${holder?.pid ?? '?'}); gave up waiting`);
    if (!told) opts.log?.(`waiting for another pull of the same model (pid ${holder?.pid ?? '?'}, lock ${file})`);
    told = true;
    await sleep(opts.pollMs ?? 200);
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(file, { force: true });
  }
}
