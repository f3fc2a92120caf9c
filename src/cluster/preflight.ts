// Checks made before anything starts, so that the usual operator mistakes end in one clear line
// rather than a stack trace from a worker.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ensureModel } from '../models/fetch.js';
import { pullModel } from '../models/pull.js';
import { formatRef } from '../models/ref.js';
import { modelsDir, storeOptions, type Config } from '../config.js';
import { openStore, type Store } from '../store/index.js';
import { isPostgresUrl } from '../store/postgres/index.js';

export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** Creates the data dir when missing and proves it can be read and written. */
export function checkDataDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    if (!fs.statSync(dir).isDirectory()) throw new Error('not a directory');
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    fs.readdirSync(dir);
    const probe = path.join(dir, `.write-test-${process.pid}`);
    fs.writeFileSync(probe, '');
    fs.rmSync(probe);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new StartupError(`data dir ${dir} is not a readable and writable directory (${reason})`);
  }
}

/** The store as the configuration names it; a failure to open it is one line naming where. */
export async function openConfiguredStore(config: Config): Promise<Store> {
  try {
    return await openStore(config.store, storeOptions(config));
  } catch (err) {
    throw new StartupError(`cannot open the store ${storeName(config)}: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** "LMDB in DIR" or the PostgreSQL URL without its password. */
export function storeName(config: Config): string {
  if (!isPostgresUrl(config.store)) return `LMDB in ${config.store}`;
  const url = new URL(config.store);
  url.password = '';
  return `PostgreSQL at ${url.toString()}`;
}

/**
 * Before any worker starts: a data dir that can be written, or a database that accepts this node
 * (migrated, the same ARBITRA_KEY_SECRET as the other nodes), so a mistake is one line, not one per worker.
 */
export async function prepareStore(config: Config): Promise<void> {
  if (!isPostgresUrl(config.store)) return checkDataDir(config.store);
  await (await openConfiguredStore(config)).close();
}

/**
 * The model file to load: a catalogue model, fetched when missing; an hf: reference or URL, pulled
 * first when it is not in the store yet; or a named file, which must exist.
 */
export async function resolveModel(config: Config, log: (line: string) => void): Promise<string> {
  if (config.modelPull) {
    const source = formatRef(config.modelPull);
    log(`model ${source} is not pulled yet: pulling it into ${modelsDir()} before loading`);
    try {
      const { record, path: file } = await pullModel(config.modelPull, { dir: modelsDir(), progress: { log } });
      log(`model ${source} pulled as ${record.name} (${file}); later starts use it without the network`);
      return file;
    } catch (err) {
      throw new StartupError(`cannot pull the model ${source}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (config.modelEntry) {
    try {
      return await ensureModel(config.modelEntry, path.dirname(config.model), log);
    } catch (err) {
      throw new StartupError(`cannot prepare the model ${config.modelEntry.name}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (!fs.existsSync(config.model) || !fs.statSync(config.model).isFile()) throw new StartupError(`model file ${config.model} does not exist`);
  return config.model;
}

/**
 * Proves host:port is free and returns the port (a free one for port 0). uWS listens with
 * SO_REUSEPORT, which would silently share a port with another uWS server; a plain exclusive
 * bind here fails instead, whoever holds the port.
 */
export function probePort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is already in use' : err.code === 'EACCES' ? 'needs privileges' : `is unavailable (${err.code ?? err.message})`;
      reject(new StartupError(`cannot listen on ${host}:${port}: the port ${why}`));
    });
    server.listen({ host, port, exclusive: true }, () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

export function startupLine(opts: { host: string; port: number; model: string; backend: string; workers: number; http: string; engines?: number }): string {
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const workers = opts.workers === 0 ? 'single process' : `${opts.workers} worker${opts.workers === 1 ? '' : 's'}`;
  const engines = (opts.engines ?? 1) > 1 ? `, ${opts.engines} engines` : '';
  return `arbitra listening on http://${host}:${opts.port} (model ${opts.model}, backend ${opts.backend}${engines}, ${workers}, http ${opts.http})`;
}
