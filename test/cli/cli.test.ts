// The arbitra command as an operator runs it: a real process of the built CLI (what `npm start` and
// the service units run; `npm test` builds it first), real LMDB in a temp dir.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { DEFAULT_MODEL_FILE, SMALL_LANES, TEST_MODEL, TEST_MODEL_ID } from '../helpers/models.js';
import { DEFAULT_MODEL } from '../../src/models/catalogue.js';
import { packageRoot } from '../../src/paths.js';

// The built entry, not src/cli/main.ts through tap's TypeScript loader: that compiled the whole tree
// again in every process (2.3 s for --help against 0.4 s), in each cluster worker and engine too.
const main = path.join(packageRoot(), 'dist/src/cli/main.js');

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], {
      env: { ...process.env, ARBITRA_DATA_DIR: '', ARBITRA_PORT: '', ARBITRA_WORKERS: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const oneLine = (t: Test, text: string, re: RegExp): void => {
  t.equal(text.trimEnd().split('\n').length, 1, `one line: ${text.trimEnd()}`);
  t.match(text, re);
};

t.test('--help documents commands, flags and variables', async (t) => {
  const { code, stdout } = await run(['--help']);
  t.equal(code, 0);
  for (const word of [
    'serve',
    'calibrate',
    'models list',
    'models pull',
    '--calibration/ARBITRA_CALIBRATION',
    'ARBITRA_SELF_TEST',
    'keys create',
    'keys list',
    'keys revoke',
    '--host/ARBITRA_HOST',
    '--port/ARBITRA_PORT',
    '--data-dir/ARBITRA_DATA_DIR',
    '--model/ARBITRA_MODEL',
    '--workers/ARBITRA_WORKERS',
    'ARBITRA_CONSOLE_TOKEN',
    'ARBITRA_MAX_BODY_BYTES',
    'ARBITRA_MODEL_ALIASES',
    '--gpu-layers',
  ]) {
    t.match(stdout, word);
  }
  const bare = await run([]);
  t.equal(bare.code, 2, 'no command is a usage error');
});

t.test('usage and configuration errors are one line and exit 2', async (t) => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['frobnicate'], {}, /unknown command "frobnicate"/],
    [['serve', '--prot', '1'], {}, /unknown option --prot/],
    [['serve', '--port', 'http'], {}, /--port must be an integer from 0 to 65535, got "http"/],
    [['serve', '--port'], {}, /--port needs a value/],
    [['serve'], { ARBITRA_PORT: '70000' }, /ARBITRA_PORT must be an integer/],
    [['serve'], { ARBITRA_WORKERS: '-1' }, /ARBITRA_WORKERS must be an integer/],
    [['serve'], { ARBITRA_MAX_BODY_BYTES: '1MB' }, /ARBITRA_MAX_BODY_BYTES must be an integer/],
    [['serve'], { ARBITRA_HTTP: 'fast' }, /ARBITRA_HTTP must be "uws" or "node"/],
    [['serve'], { ARBITRA_MODEL_ALIASES: 'fast' }, /ARBITRA_MODEL_ALIASES/],
    [['serve'], { ARBITRA_RATE_LIMIT_RPS: 'lots' }, /ARBITRA_RATE_LIMIT_RPS/],
    [['keys', 'create'], {}, /--email is required/],
    [['keys', 'create', '--email', 'not-an-email'], {}, /not a valid email/],
    [['keys', 'rotate'], {}, /unknown keys command "rotate"/],
    [['keys', 'revoke'], {}, /keys revoke needs a key ID/],
    [
      ['models', 'pull'],
      {},
      /models pull needs hf:ORG\/REPO\[:QUANT\], hf:ORG\/REPO\/FILE\.gguf, a URL, or a catalogue name: qwen2\.5-coder-1\.5b-instruct-q4_k_m, gemma-3-270m-q4_k_m, smollm2-135m-instruct-q4_1/,
    ],
    [['models', 'pull', 'llama-70b'], {}, /no catalogue model named "llama-70b"/],
    [['models', 'rm'], {}, /models rm needs the name of a model/],
    [['models', 'remove'], {}, /unknown models command "remove"; use list, pull or rm/],
    [['calibrate', '--model'], {}, /--model needs a value/],
    [['serve'], { ARBITRA_CALIBRATION: 'sometimes' }, /ARBITRA_CALIBRATION must be "off", "fitted" \(or "on"\) or "preset", got "sometimes"/],
  ];
  // All at once: each is a process that starts and exits, and 20 of them one by one took 5 s.
  const replies = await Promise.all(cases.map(([args, env]) => run(args, env)));
  for (const [i, [args, , re]] of cases.entries()) {
    t.equal(replies[i]!.code, 2, args.join(' '));
    oneLine(t, replies[i]!.stderr, re);
  }
});

t.test('serve: unusable data dir, port in use, missing model', async (t) => {
  const dir = t.testdir({ 'a-file': 'x' });
  const asFile = await run(['serve', '--workers', '0', '--port', '0', '--data-dir', path.join(dir, 'a-file')]);
  t.equal(asFile.code, 1);
  oneLine(t, asFile.stderr, /data dir .*a-file is not a readable and writable directory/);

  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as net.AddressInfo).port;
  for (const workers of ['0', '2']) {
    const inUse = await run(['serve', '--workers', workers, '--port', String(port), '--data-dir', path.join(dir, 'data')]);
    t.equal(inUse.code, 1, `workers ${workers}`);
    oneLine(t, inUse.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
  }

  const noModel = await run(['serve', '--workers', '0', '--port', '0', '--data-dir', path.join(dir, 'data'), '--model', path.join(dir, 'nope.gguf')]);
  t.equal(noModel.code, 1);
  oneLine(t, noModel.stderr, /model file .*nope\.gguf does not exist/);
});

t.test('keys create, list and revoke against one data dir', async (t) => {
  const dir = path.join(t.testdir(), 'data');
  const created = await run(['keys', 'create', '--email', 'Ops@Example.com', '--name', 'ci', '--data-dir', dir]);
  t.equal(created.code, 0, created.stderr);
  const secret = created.stdout.trim();
  t.match(secret, /^arb_\S{30,}$/, 'stdout is the secret alone');
  t.match(created.stderr, /shown only once/);
  t.notMatch(created.stderr, secret, 'the secret is printed once');
  const id = /created key (\S+)/.exec(created.stderr)![1]!;

  const second = await run(['keys', 'create', '--email', 'ops@example.com'], { ARBITRA_DATA_DIR: dir });
  t.equal(second.code, 0, 'ARBITRA_DATA_DIR is honoured');
  t.not(second.stdout.trim(), secret);

  const listed = await run(['keys', 'list', '--email', 'ops@example.com', '--data-dir', dir]);
  t.equal(listed.code, 0);
  const lines = listed.stdout.trim().split('\n');
  t.equal(lines.length, 3, 'header and two keys');
  t.match(lines[0], /^ID\s+NAME\s+KEY\s+CREATED/);
  t.match(listed.stdout, id);
  t.match(listed.stdout, /\bci\b/);
  t.match(listed.stdout, /\bDefault\b/);
  t.notMatch(listed.stdout, secret, 'never the secret');
  t.notMatch(listed.stdout.split('\n').find((l) => l.startsWith(id))!, /\d{4}-\d\d-\d\dT\S+\s*$/, 'not revoked yet');

  const revoked = await run(['keys', 'revoke', id, '--data-dir', dir]);
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.stdout, `revoked ${id}`);
  const after = await run(['keys', 'list', '--email', 'ops@example.com', '--data-dir', dir]);
  t.match(after.stdout.split('\n').find((l) => l.startsWith(id))!, /\d{4}-\d\d-\d\dT\S+\s*$/, 'revoked_at is shown');

  // One key is active now; the server's per-user bound applies to the CLI too.
  const bounded = await run(['keys', 'create', '--email', 'ops@example.com', '--data-dir', dir], { ARBITRA_MAX_KEYS_PER_USER: '1' });
  t.equal(bounded.code, 1, 'ARBITRA_MAX_KEYS_PER_USER bounds keys made with the CLI');
  oneLine(t, bounded.stderr, /1 active API key/);

  const unknown = await run(['keys', 'revoke', 'no-such-key', '--data-dir', dir]);
  t.equal(unknown.code, 1);
  oneLine(t, unknown.stderr, /no key with id no-such-key/);

  const nobody = await run(['keys', 'list', '--email', 'nobody@example.com', '--data-dir', dir]);
  t.equal(nobody.stdout.trim().split('\n').length, 1, 'only the header for a user without keys');
  t.ok(fs.existsSync(dir));
});

t.test('models list: every catalogue model with its size and state; local files too', async (t) => {
  const dir = t.testdir({ 'mine.gguf': 'GGUF' });
  const { code, stdout } = await run(['models', 'list'], { ARBITRA_MODELS_DIR: dir });
  t.equal(code, 0);
  t.match(stdout, /^NAME\s+SIZE\s+STATE\s+LICENSE\s+ABOUT$/m);
  t.match(stdout, /^qwen2\.5-coder-1\.5b-instruct-q4_k_m \(default\)\s+1\.04 GiB\s+available\s+Apache-2\.0/m, 'an empty folder: fetchable');
  t.match(stdout, /^smollm2-135m-instruct-q4_1\s+94 MiB\s+available/m);
  t.match(stdout, /^mine\s+0 MiB\s+local file/m);
  const installed = await run(['models', 'list']);
  t.match(installed.stdout, /^gemma-3-270m-q4_k_m\s+241 MiB\s+installed/m, 'the test model npm test pulled is installed');
});

t.test('serve --model: a name outside the catalogue is a path, which must exist', async (t) => {
  const r = await run(['serve', '--model', 'no-such-model', '--workers', '0', '--port', '0', '--data-dir', path.join(t.testdir(), 'data')]);
  t.equal(r.code, 1);
  oneLine(t, r.stderr, /model file .*no-such-model does not exist/);
});

const modelFile = DEFAULT_MODEL_FILE;
for (const workers of ['0', '2']) {
  t.test(
    `serve --workers ${workers}: start-up line, health, clean SIGTERM`,
    { skip: !fs.existsSync(modelFile) && 'the default model is not downloaded' },
    async (t) => {
      const dir = path.join(t.testdir(), 'data');
      // Small KV lanes: the default ones take 8 s of the default model's load here, and what is
      // tested is the command, not the lanes.
      const lanes = ['--ctx-size', '2048', ...SMALL_LANES];
      // The first start is a user's: the default model with no --model, its determinism check and
      // self-test. The second tests the workers, on the test model with neither (each costs
      // seconds of the default model's load, and a base model fails the self-test).
      const asUser = workers === '0';
      const model = asUser ? [] : ['--model', TEST_MODEL];
      const modelName = asUser ? DEFAULT_MODEL.name : TEST_MODEL_ID;
      const checks = asUser ? 'on' : 'off';
      const child = spawn(process.execPath, [main, 'serve', '--workers', workers, '--port', '0', '--data-dir', dir, ...model, ...lanes], {
        env: { ...process.env, ARBITRA_PORT: '', ARBITRA_WORKERS: '', ARBITRA_DETERMINISM_CHECK: checks, ARBITRA_SELF_TEST: checks },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      const line = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (c) => {
          stderr += c;
          const m = /^arbitra listening on .*$/m.exec(stderr);
          if (m) resolve(m[0]);
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
      const expectWorkers = workers === '0' ? 'single process' : `${workers} workers`;
      t.match(
        line,
        new RegExp(
          `^arbitra listening on http://127\\.0\\.0\\.1:\\d+ \\(model ${modelName.replaceAll('.', '\\.')}, backend (cpu|cuda), ${expectWorkers}, http uws \\(uwebsockets@3\\.0\\.6, binary sha256 [0-9a-f]{8}…[0-9a-f]{4}\\)\\)$`,
        ),
      );
      const base = /http:\/\/\S+/.exec(line)![0];
      const pids = new Set<number>();
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${base}/health`, { headers: { connection: 'close' } });
        t.equal(res.status, 200);
        const body = await res.json();
        t.match(body, {
          status: 'ok',
          workers: Number(workers),
          http: 'uws',
          http_front: { implementation: 'uws', package: 'uwebsockets@3.0.6', binary_sha256: /^[0-9a-f]{64}$/ },
          model: { loaded: true },
        });
        pids.add(body.pid);
      }
      if (workers === '2') {
        t.equal(pids.size, 2, 'both workers answer on the one port');
        const metrics = await (await fetch(`${base}/metrics`)).text();
        const m = /arbitra_http_requests_total\{route="\/health",method="GET",status="200"\} (\d+)/.exec(metrics);
        t.equal(Number(m?.[1]), 20, 'the count covers every worker');
      }
      if (asUser) {
        // The default model passes the load-time self-test, which runs once it serves.
        const selfTest = await new Promise<string>((resolve) => {
          const check = () => {
            const m = /^(self-test: .*|warning: .*self-test.*)$/m.exec(stderr);
            if (m) resolve(m[0]);
          };
          check();
          child.stderr.on('data', check);
        });
        t.match(selfTest, new RegExp(`^self-test: ${DEFAULT_MODEL.name.replaceAll('.', '\\.')} answered 5/5 obvious decisions right$`));
        // Printed before the self-test's line; on the CPU the promise holds, a GPU build's line says whether it does there.
        const held = line.includes('backend cpu')
          ? /^determinism: exact kernels give the same scores bit for bit on this machine/m
          : /^(WARNING: )?determinism/m;
        t.match(stderr, held, 'the start-up says what the check at load found');
      }
      const code = await new Promise<number | null>((resolve) => {
        child.on('exit', (c) => resolve(c));
        child.kill('SIGTERM');
      });
      t.equal(code, 0, 'SIGTERM ends it cleanly');
    },
  );
}
