// Entry of the engine process: the one process that holds the model. The host in the cluster
// primary forks it and relays every worker's requests to it.
import { EngineError } from './types.js';
import { createLocalEngine, type LocalEngine } from './local.js';
import { ENGINE_CONFIG_ENV, type ProcessEngineMessage, type WireError } from './ipc.js';

function send(msg: ProcessEngineMessage): void {
  process.send?.(msg);
}

function wire(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message, details: err.details };
  return { code: 'internal', message: (err as Error).message };
}

async function main(): Promise<void> {
  const { modelPath, options } = JSON.parse(process.env[ENGINE_CONFIG_ENV] ?? '{}');
  let engine: LocalEngine;
  try {
    engine = await createLocalEngine(modelPath, options);
  } catch (err) {
    send({ type: 'failed', error: wire(err) });
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
      work = msg.op === 'info' ? engine.info() : Promise.resolve(engine.engine.stats());
    }
    work.then(
      (result) => send({ type: 'response', id: msg.id, ok: true, result }),
      (err) => send({ type: 'response', id: msg.id, ok: false, error: wire(err) }),
    );
  });
  // The primary owns the lifecycle: losing it (IPC closed) means shutting down.
  process.on('disconnect', () => {
    void engine.close().finally(() => process.exit(0));
  });
  // Ctrl-C and a service manager's SIGTERM reach the whole process group; the primary stops this
  // process once the HTTP workers have answered what they hold.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  send({ type: 'ready', info: await engine.info() });
}

void main();
