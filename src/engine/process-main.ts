// Entry of the engine process: the one process that holds the model. The host in the cluster
// primary forks it; it serves the engine service (rpc/server.ts) on a private Unix socket, where
// the HTTP workers and the primary send their calls, and tells the primary when it is ready.
import { createLocalEngine, type LocalEngine } from './local.js';
import { ENGINE_CONFIG_ENV, wireError, type ProcessEngineMessage } from './ipc.js';
import { serveEngine, type EngineServer } from './rpc/server.js';
import { privateSocketPath, removeEngineSocket } from './rpc/socket-dir.js';
import type { EngineOptions } from './types.js';

function send(msg: ProcessEngineMessage): void {
  process.send?.(msg);
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const { modelPath, options } = JSON.parse(process.env[ENGINE_CONFIG_ENV] ?? '{}') as { modelPath: string; options: Partial<EngineOptions> };
  let engine: LocalEngine;
  let server: EngineServer;
  try {
    engine = await createLocalEngine(modelPath, options);
    const socket = await privateSocketPath();
    process.on('exit', () => removeEngineSocket(socket));
    server = await serveEngine(engine, { path: socket }, log);
  } catch (err) {
    send({ type: 'failed', error: wireError(err) });
    process.exit(1);
  }
  // The primary owns the lifecycle: losing it (IPC closed) means shutting down.
  process.on('disconnect', () => {
    void server
      .close()
      .then(() => engine.close())
      .finally(() => process.exit(0));
  });
  // Ctrl-C and a service manager's SIGTERM reach the whole process group; the primary stops this
  // process once the HTTP workers have answered what they hold.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  send({ type: 'ready', info: await engine.info(), address: server.address, jobsDone: engine.stats().jobsDone });
}

void main();
