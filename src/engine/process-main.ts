// Entry of the engine process: the one process that holds the model. The host in the cluster
// primary forks it; HTTP workers send their scoring requests to its socket, or through the primary
// when they cannot reach it.
import { createLocalEngine, type LocalEngine } from './local.js';
import { ENGINE_CONFIG_ENV, wireError, type ProcessEngineMessage } from './ipc.js';
import { serveEngineSocket, type EngineSocketServer } from './socket.js';

function send(msg: ProcessEngineMessage): void {
  process.send?.(msg);
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const { modelPath, options } = JSON.parse(process.env[ENGINE_CONFIG_ENV] ?? '{}');
  let engine: LocalEngine;
  try {
    engine = await createLocalEngine(modelPath, options);
  } catch (err) {
    send({ type: 'failed', error: wireError(err) });
    process.exit(1);
  }
  // Scoring requests still running, by the primary's id, so a `cancel` can reach them.
  const running = new Map<number, AbortController>();
  process.on('message', (msg: ProcessEngineMessage) => {
    if (msg.type === 'cancel') {
      running.get(msg.id)?.abort();
      return;
    }
    if (msg.type !== 'request') return;
    let work: Promise<unknown>;
    if (msg.op === 'score') {
      const aborter = new AbortController();
      running.set(msg.id, aborter);
      work = engine.scoreText(msg.payload, aborter.signal).finally(() => running.delete(msg.id));
    } else {
      work = Promise.resolve(engine.stats());
    }
    work.then(
      (result) => send({ type: 'response', id: msg.id, ok: true, result }),
      (err) => send({ type: 'response', id: msg.id, ok: false, error: wireError(err) }),
    );
  });
  // Windows keeps the relay: a named pipe would need an access list of its own to be as private as
  // a 0600 socket in a 0700 directory. Without a socket the workers relay; nothing else changes.
  let socket: EngineSocketServer | undefined;
  if (process.platform !== 'win32') {
    try {
      socket = await serveEngineSocket(engine, log);
    } catch (err) {
      log(`engine socket unavailable (${(err as Error).message}); HTTP workers will go through the primary`);
    }
  }
  process.on('exit', () => socket?.close());
  // The primary owns the lifecycle: losing it (IPC closed) means shutting down.
  process.on('disconnect', () => {
    void engine.close().finally(() => process.exit(0));
  });
  // Ctrl-C and a service manager's SIGTERM reach the whole process group; the primary stops this
  // process once the HTTP workers have answered what they hold.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  send({ type: 'ready', info: await engine.info(), socket: socket?.path });
}

void main();
