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
  process.on('message', (msg: ProcessEngineMessage) => {
    if (msg.type !== 'request') return;
    const work: Promise<unknown> =
      msg.op === 'score' ? engine.scoreText(msg.payload) : msg.op === 'info' ? engine.info() : Promise.resolve(engine.engine.stats());
    work.then(
      (result) => send({ type: 'response', id: msg.id, ok: true, result }),
      (err) => send({ type: 'response', id: msg.id, ok: false, error: wire(err) }),
    );
  });
  // The primary owns the lifecycle: losing it (IPC closed) means shutting down.
  process.on('disconnect', () => {
    void engine.close().finally(() => process.exit(0));
  });
  process.on('SIGINT', () => {});
  send({ type: 'ready', info: await engine.info() });
}

void main();
