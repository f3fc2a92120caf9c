// Runs llama.cpp's `llama-server` (built by ensureLlamaTool from the same source and kernels as the
// addon): the baseline the API benchmark compares against.
import { spawn, type ChildProcess } from 'node:child_process';

const STOP_GRACE_MS = 15_000;

export interface RunningLlamaServer {
  url: string;
  pid: number;
  command: string;
  stop: () => Promise<void>;
}

export async function startLlamaServer(
  binary: string,
  opts: { model: string; port: number; threads: number; parallel: number; ctxPerSlot: number },
): Promise<RunningLlamaServer> {
  const args = [
    '-m',
    opts.model,
    '--host',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '-t',
    String(opts.threads),
    '-tb',
    String(opts.threads),
    '-np',
    String(opts.parallel),
    '-c',
    String(opts.ctxPerSlot * opts.parallel),
    '--no-webui',
  ];
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const url = `http://127.0.0.1:${opts.port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited: ${stderr}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) {
      return {
        url,
        pid: child.pid!,
        command: [binary, ...args].join(' '),
        async stop() {
          // A server that already died (or took the terminal's Ctrl-C) sends no second 'exit'.
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
          child.kill('SIGTERM');
          // Once its task queue has stopped, llama-server waits forever on requests still in flight.
          const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await exited;
          clearTimeout(kill);
        },
      };
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`llama-server did not become healthy: ${stderr}`);
}
