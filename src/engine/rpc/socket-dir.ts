// Where a local engine listens: a Unix socket in a fresh directory of its own (mode 0700, the
// socket 0600), so only this user reaches it, named with the engine's pid so that the sockets of
// engines that died with their host (a SIGKILL to the whole group leaves nobody to remove them)
// can be found and removed by the next engine.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const DIR_PREFIX = 'arbitra-engine-';

/** A new private socket path for this process; orphans of dead engines are removed first. */
export async function privateSocketPath(): Promise<string> {
  await removeOrphans();
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), `${DIR_PREFIX}${process.pid}-`)), 'engine.sock');
}

/**
 * The socket and its directory; also called by the engine's host, since a killed engine cannot.
 * Best effort: a leftover directory in the temp dir must not stop an engine or its host.
 */
export function removeEngineSocket(file: string): void {
  try {
    fs.rmSync(file, { force: true });
    fs.rmdirSync(path.dirname(file));
  } catch {
    // Already gone, or not ours to remove.
  }
}

/**
 * Only when the pid in the name runs no more here and nothing answers on the socket: a /tmp shared
 * with another pid namespace may hold a live engine under a pid that means nothing here.
 */
async function removeOrphans(): Promise<void> {
  const dirs = fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith(DIR_PREFIX) && !running(Number(name.slice(DIR_PREFIX.length).split('-')[0])));
  await Promise.all(
    dirs.map(async (name) => {
      const file = path.join(os.tmpdir(), name, 'engine.sock');
      if (!(await answers(file))) removeEngineSocket(file);
    }),
  );
}

function running(pid: number): boolean {
  // Not a pid: not ours to judge.
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** False only when the socket is certainly dead: refused, or gone. */
function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createConnection(file);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT'));
  });
}
