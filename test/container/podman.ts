// Podman for the container tests (npm run test:container, scripts/container/test.mjs): the images
// that script built, containers on the host's network (the one kind of network every machine the
// suite runs on gives podman), and waits that end in a clear failure, never a hang. A file that
// imports this is in the suite's container tier: `npm test` leaves it out.
import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { call, type Reply } from '../../bench/lib/http.js';
import { packageRoot } from '../../src/paths.js';

const exec = promisify(execFile);

// podman's settings for these machines (scripts/container/containers-conf.mjs), unless the caller
// (scripts/container/test.mjs) set them: a test file run alone, or the bench, needs them as well.
process.env.CONTAINERS_CONF ||= execFileSync(process.execPath, [path.join(packageRoot(), 'scripts', 'container', 'containers-conf.mjs')], {
  encoding: 'utf8',
}).trim();

/** The images scripts/container/test.mjs built: this commit's, and the one it upgrades from. */
export const IMAGE = process.env.ARBITRA_TEST_IMAGE ?? 'localhost/arbitra:cpu';
export const PREVIOUS_IMAGE = process.env.ARBITRA_TEST_PREVIOUS_IMAGE ?? IMAGE;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; `ok` false lets a failure through as a non-zero code instead of throwing. */
export async function sh(cmd: string, args: readonly string[], opts: { ok?: boolean; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Run> {
  try {
    const r = await exec(cmd, args, { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 600_000, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string; message: string };
    if (opts.ok !== false) throw new Error(`${cmd} ${args.join(' ')} failed: ${e.stderr || e.message}`);
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message };
  }
}

export const podman = (args: readonly string[], opts: { ok?: boolean; timeoutMs?: number } = {}): Promise<Run> => sh('podman', args, opts);

/** A name no other run of the suite uses, so that cleanup removes only what this run made. */
export function uniqueName(what: string): string {
  return `arbitra-test-${what}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}

/** An image's metadata as `podman image inspect` gives it. */
export async function inspectImage(image: string): Promise<{
  Size: number;
  Labels: Record<string, string>;
  Config: { User?: string; Volumes?: Record<string, unknown>; Entrypoint?: string[]; Cmd?: string[]; Env?: string[]; StopSignal?: string };
  Healthcheck?: { Test?: string[] };
}> {
  const out = await podman(['image', 'inspect', image]);
  return (JSON.parse(out.stdout) as [never])[0];
}

export interface Container {
  name: string;
  url: string;
  logs(): Promise<string>;
  exec(args: readonly string[], opts?: { ok?: boolean }): Promise<Run>;
  /** The container's state as `podman inspect` gives it. */
  state(): Promise<{ Status: string; ExitCode: number; Running: boolean }>;
  remove(): Promise<void>;
}

/** `podman run -d` of `image` (serve unless `args` say otherwise) on the host's network, listening on `port`. */
export async function runContainer(opts: {
  image: string;
  name: string;
  port: number;
  env?: Record<string, string>;
  volumes?: string[];
  args?: string[];
}): Promise<Container> {
  const flags = ['run', '-d', '--name', opts.name, '--network', 'host', '--stop-timeout', '60', '-e', `ARBITRA_PORT=${opts.port}`];
  for (const [k, v] of Object.entries(opts.env ?? {})) flags.push('-e', `${k}=${v}`);
  for (const v of opts.volumes ?? []) flags.push('-v', v);
  await podman([...flags, opts.image, ...(opts.args ?? ['serve'])]);
  return containerNamed(opts.name, `http://127.0.0.1:${opts.port}`);
}

export function containerNamed(name: string, url: string): Container {
  return {
    name,
    url,
    logs: async () => {
      const r = await podman(['logs', name], { ok: false });
      return `${r.stdout}${r.stderr}`;
    },
    exec: (args, opts) => podman(['exec', name, ...args], opts),
    state: async () =>
      JSON.parse((await podman(['inspect', '--format', '{{json .State}}', name])).stdout) as { Status: string; ExitCode: number; Running: boolean },
    remove: async () => {
      await podman(['rm', '-f', '-t', '0', name], { ok: false });
    },
  };
}

/** Polls `url`/health until it answers 200; fails with the container's log when it does not within `ms`. */
export async function waitHealthy(container: Container, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await call(`${container.url}/health`, { timeoutMs: 5_000, fresh: true });
    if (r.status === 200) return;
    const state = await container.state().catch(() => null);
    if (Date.now() > until || (state && !state.Running)) {
      throw new Error(
        `${container.name} is not healthy (last /health: ${r.status || r.error}, state ${state?.Status}):\n${(await container.logs()).slice(-4000)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** `arbitra keys create` inside the container; the secret it prints once. */
export async function createKey(container: Container, email: string): Promise<string> {
  const r = await container.exec(['arbitra', 'keys', 'create', '--email', email]);
  const secret = r.stdout.trim();
  if (!/^arb_\w+$/.test(secret)) throw new Error(`keys create printed ${JSON.stringify(r.stdout)} (stderr ${r.stderr})`);
  return secret;
}

/** POST /v1/systemone with `key`, on a connection of its own. */
export function decide(container: Container, key: string, body: Record<string, unknown>, timeoutMs = 120_000): Promise<Reply> {
  return call(`${container.url}/v1/systemone`, { headers: { authorization: `Bearer ${key}` }, body, timeoutMs, fresh: true });
}

/** The requests counted for `email`'s keys, all days summed, as the console's usage route reports them. */
export async function usageCount(container: Container, consoleToken: string, email: string): Promise<number> {
  const r = await call(`${container.url}/v1/console/usage`, {
    headers: { 'x-arbitra-console-token': consoleToken, 'x-arbitra-user-email': email },
    timeoutMs: 30_000,
  });
  if (r.status !== 200) throw new Error(`usage answered ${r.status}: ${r.text}`);
  return (JSON.parse(r.text) as { rows: { requests: number }[] }).rows.reduce((sum, row) => sum + row.requests, 0);
}
