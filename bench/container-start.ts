// `npm run bench:container-start`: how much later a container answers its first decision than the
// same server started on the host. Each round starts `arbitra serve` with the same model and
// defaults twice, once on the host (`node dist/src/cli/main.js serve`) and once in the CPU image
// (`podman run ... serve`, the host's models folder mounted, host network), in alternating order,
// and times each from the command's start to the first 200 from POST /v1/systemone, asked every
// 100 ms with a key made beforehand. A round's starts find the model file in the page cache (a
// restart); with --drop-caches (root) each start begins with an empty page cache instead (a boot).
// The goal: the container within 2x the host. Writes the "Containers (issue 41)" section of
// bench/RESULTS.md.
//
//   npm run bench:container-start -- [--image localhost/arbitra:cpu-<commit>] [--rounds 3] [--drop-caches]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../src/paths.js';
import { IMAGE, inspectImage, podman, uniqueName } from '../test/container/podman.js';
import { decisionBody } from './lib/bodies.js';
import { call } from './lib/http.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { freePort } from './lib/serve.js';
import { median } from './lib/stats.js';

const GOAL_RATIO = 2;
const FIRST_ANSWER_TIMEOUT_MS = 600_000;
const root = packageRoot();
const CLI = path.join(root, 'dist', 'src', 'cli', 'main.js');
const log = (msg: string): void => void process.stdout.write(`[bench:container-start] ${msg}\n`);

const { values, common } = benchArgs({ image: { type: 'string' }, rounds: { type: 'string' }, 'drop-caches': { type: 'boolean', default: false } });
const image = (values.image as string | undefined) ?? IMAGE;
const rounds = numberOption(values.rounds, 'rounds', 3);
const dropCaches = values['drop-caches'] === true;
const modelName = path.basename(common.model, '.gguf');
if (path.dirname(common.model) !== path.join(root, 'models'))
  throw new Error(`--model must be a model of ${path.join(root, 'models')}, which the container mounts`);

/** Milliseconds from `started` until the server at `url` answers a decision with `key`. */
async function firstAnswer(url: string, key: string, started: number, stillRunning: () => boolean): Promise<number> {
  const body = decisionBody('small', 1);
  for (;;) {
    const r = await call(`${url}/v1/systemone`, { headers: { authorization: `Bearer ${key}` }, body, timeoutMs: 60_000, fresh: true });
    if (r.status === 200) return performance.now() - started;
    if (!stillRunning() || performance.now() - started > FIRST_ANSWER_TIMEOUT_MS)
      throw new Error(`no answer (last: ${r.status || r.error} ${r.text.slice(0, 200)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function emptyPageCache(): void {
  if (!dropCaches) return;
  execFileSync('sync');
  fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
}

async function onHost(): Promise<number> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-start-'));
  const key = execFileSync(process.execPath, [CLI, 'keys', 'create', '--email', 'bench@example.com', '--data-dir', dataDir], { encoding: 'utf8' }).trim();
  const port = await freePort();
  emptyPageCache();
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'serve', '--port', String(port), '--data-dir', dataDir, '--model', modelName], {
    stdio: 'ignore',
    detached: true,
  });
  let running = true;
  child.once('exit', () => (running = false));
  try {
    return await firstAnswer(`http://127.0.0.1:${port}`, key, started, () => running);
  } finally {
    if (running) {
      process.kill(-child.pid!, 'SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function inContainer(): Promise<number> {
  const volume = uniqueName('start-data');
  const name = uniqueName('start');
  const mounts = ['-v', `${volume}:/var/lib/arbitra/data`, '-v', `${root}/models:/var/lib/arbitra/models:ro`];
  try {
    const key = (
      await podman(['run', '--rm', '--network', 'host', '--no-healthcheck', ...mounts, image, 'keys', 'create', '--email', 'bench@example.com'])
    ).stdout.trim();
    const port = await freePort();
    emptyPageCache();
    const started = performance.now();
    await podman(['run', '-d', '--name', name, '--network', 'host', ...mounts, '-e', `ARBITRA_PORT=${port}`, image, 'serve', '--model', modelName]);
    return await firstAnswer(`http://127.0.0.1:${port}`, key, started, () => true);
  } finally {
    await podman(['rm', '-f', '-t', '40', name], { ok: false });
    await podman(['volume', 'rm', '-f', volume], { ok: false });
  }
}

const host: number[] = [];
const container: number[] = [];
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? [onHost, inContainer] : [inContainer, onHost];
  for (const start of order) {
    const ms = await start();
    (start === onHost ? host : container).push(ms);
    log(`round ${round + 1}: ${start === onHost ? 'host' : 'container'} answered after ${(ms / 1000).toFixed(2)} s`);
  }
}

const size = (await inspectImage(image)).Size;
const ratio = median(container) / median(host);
const cache = dropCaches ? 'an empty page cache before every start (`--drop-caches`)' : 'the model file in the page cache (a restart)';
const command = `npm run bench:container-start -- --image ${image} --rounds ${rounds}${dropCaches ? ' --drop-caches' : ''}${values.model ? ` --model ${modelName}` : ''}`;
writeRawResult(`container-start${dropCaches ? '-cold' : ''}`, { image, size, model: modelName, host, container, ratio });
const secs = (xs: number[]): string => xs.map((x) => (x / 1000).toFixed(2)).join(', ');
publishSection(
  common.resultsFile,
  `Containers (issue 41)${dropCaches ? ': cold page cache' : ''}`,
  `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${os.cpus().length} cores, with \`${command}\`.
Model \`${modelName}\`, \`arbitra serve\` with its defaults on both sides; ${cache}; ${rounds} rounds, host and container in
alternating order; each time from the command's start to the first 200 from POST /v1/systemone. Image \`${image}\`,
${(size / 1e6).toFixed(0)} MB (\`podman image inspect --format '{{.Size}}'\`).

| start | median s | each s |
|---|---|---|
| host: \`node dist/src/cli/main.js serve --model ${modelName}\` | ${(median(host) / 1000).toFixed(2)} | ${secs(host)} |
| container: \`podman run -d --network host -v …/models:/var/lib/arbitra/models:ro ${image} serve --model ${modelName}\` | ${(median(container) / 1000).toFixed(2)} | ${secs(container)} |

The container took **${ratio.toFixed(2)}x** the host's time (goal: at most ${GOAL_RATIO}x): ${ratio <= GOAL_RATIO ? 'met' : `missed by ${((ratio / GOAL_RATIO - 1) * 100).toFixed(0)} %`}.`,
  log,
);
