// Secrets that are known are refused by the real `arbitra serve` and `arbitra engine`: the example
// files' placeholders stop a start beyond loopback before anything loads, with one line per secret;
// on loopback the server warns and serves; generated secrets get past the check.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CLI, cannotRun, startServer } from '../integration/helpers/server.js';
import { deployEnv } from '../helpers/deploy-env.js';

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ARBITRA_') && k !== 'PGPASSWORD'));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-secrets-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

t.test("compose's example secrets stop `serve --host 0.0.0.0` before anything starts", { skip: cannotRun }, async (t) => {
  const env: Record<string, string> = {
    ...deployEnv('env/compose-arbitra.env.example'),
    ARBITRA_DATA_DIR: path.join(dir, 'refused'),
    ARBITRA_MODEL: path.join(dir, 'none.gguf'),
  };
  const out = await run(['serve', '--host', '0.0.0.0', '--port', '0', '--store', 'postgres://arbitra@postgres:5432/arbitra'], env);
  t.equal(out.code, 2, 'a configuration error');
  const lines = out.stderr.trim().split('\n');
  t.match(lines, [
    /^arbitra: ARBITRA_CONSOLE_TOKEN cannot serve beyond loopback \(--host 0\.0\.0\.0\): it is a placeholder from an example file; make one with `arbitra secrets generate`$/,
    /^arbitra: ARBITRA_KEY_SECRET cannot serve beyond loopback \(--host 0\.0\.0\.0\): it is a placeholder/,
    /^arbitra: the database password cannot serve beyond loopback \(a database at postgres\): it is a placeholder/,
  ]);
  t.notOk(fs.existsSync(path.join(dir, 'refused')), 'nothing was created');
  t.notOk(out.stderr.includes(env.ARBITRA_CONSOLE_TOKEN!), 'the secret itself is never printed');
});

t.test("an engine's example secret stops `engine --listen` on a public address", { skip: cannotRun }, async (t) => {
  const out = await run(['engine', '--listen', '0.0.0.0:7999', '--model', path.join(dir, 'none.gguf')], deployEnv('env/engine.env.example'));
  t.equal(out.code, 2);
  t.match(out.stderr, /^arbitra: ARBITRA_ENGINE_SECRET cannot serve beyond loopback \(--listen 0\.0\.0\.0\): it is a placeholder/);
});

t.test('secrets from `arbitra secrets generate` get past the check', { skip: cannotRun }, async (t) => {
  const generated = await run(['secrets', 'generate'], {});
  t.equal(generated.code, 0);
  const secrets = Object.fromEntries(
    generated.stdout
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split('=') as [string, string]),
  );
  t.same(Object.keys(secrets), ['ARBITRA_KEY_SECRET', 'ARBITRA_ENGINE_SECRET', 'ARBITRA_CONSOLE_TOKEN', 'PGPASSWORD', 'POSTGRES_PASSWORD']);
  // Past the secrets, the start goes on to the model, which this test names missing: that is the refusal it gets.
  const env = { ...secrets, ARBITRA_DATA_DIR: path.join(dir, 'generated') };
  const out = await run(['serve', '--host', '0.0.0.0', '--port', '0', '--model', path.join(dir, 'none.gguf')], env);
  t.equal(out.code, 1);
  t.match(out.stderr, /model file .*none\.gguf does not exist/);
  t.notMatch(out.stderr, /ARBITRA_|WARNING|cannot serve/, 'no word about the secrets');
});

t.test('on loopback a placeholder console token warns, and the server serves', { skip: cannotRun }, async (t) => {
  const server = await startServer(dir, { workers: 0, consoleToken: 'CHANGE-ME-console-token' });
  t.teardown(() => server.stop());
  t.match(
    server.log(),
    /^arbitra: WARNING: ARBITRA_CONSOLE_TOKEN is weak \(it is a placeholder from an example file\); it is accepted only because nothing beyond this machine can reach it/m,
  );
  t.equal((await server.call('/health')).status, 200);
});
