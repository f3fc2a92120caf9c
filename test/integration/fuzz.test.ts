// schemathesis, a schema-driven fuzzer (pinned in scripts/fuzz-env.mjs and installed into
// .venv-fuzz/ by it, which `npm test` runs before tap), against `arbitra serve` through each HTTP
// transport, reading the operations from the server's own /openapi.json. Every operation gets
// requests the schema admits and requests it refuses, and every reply must hold four promises of
// that document: no 5xx, a documented status, a documented content type, a body of the documented
// schema. Each failure is reported with the request that caused it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { cannotRun, CONSOLE_TOKEN, startServer, type Server } from './helpers/server.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const root = fileURLToPath(new URL('../../', import.meta.url));
const SCHEMATHESIS = path.join(root, '.venv-fuzz', process.platform === 'win32' ? 'Scripts/schemathesis.exe' : 'bin/schemathesis');
const CHECKS = ['not_a_server_error', 'status_code_conformance', 'content_type_conformance', 'response_schema_conformance'];
// Seconds each transport's run may take before it is interrupted (it then still writes its report);
// a full run takes about half of this on two cores.
const BUDGET_S = 75;
// The fuzzer acts as one console user and decides with a key of another. DELETE
// /v1/console/api-keys/{key_id} stays in the run, but the only keys it can reach are its console
// user's, so no request it makes can revoke the key every api_key operation needs.
const CONSOLE_USER = 'fuzz-console@example.com';
const KEY_OWNER = 'fuzz-key-owner@example.com';

/** What schemathesis reported for one operation: its failures and errors, each a block of text. */
interface Outcome {
  operation: string;
  problems: string[];
  /** Why no phase ran it, when none did. */
  skipped: string | null;
}

const unescapeXml = (s: string): string =>
  s.replace(/&(lt|gt|quot|apos|amp|#x[0-9a-f]+|#\d+);/gi, (_, e: string) =>
    e[0] === '#'
      ? String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : Number(e.slice(1)))
      : ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' } as Record<string, string>)[e.toLowerCase()]!,
  );

/** The JUnit report: one testcase per operation, holding a <failure> or <error> per problem found. */
function readJunit(xml: string): Outcome[] {
  return [...xml.matchAll(/<testcase name="([^"]*)"[^>]*?(?:\/>|>([\s\S]*?)<\/testcase>)/g)].map((m) => {
    const body = m[2] ?? '';
    const skipped = /<skipped\b[^>]*?(?:\/>|>([\s\S]*?)<\/skipped>)/.exec(body);
    return {
      operation: unescapeXml(m[1]!),
      problems: [...body.matchAll(/<(failure|error)\b[^>]*>([\s\S]*?)<\/\1>/g)].map((p) => unescapeXml(p[2]!)),
      skipped: skipped ? unescapeXml(skipped[1] ?? 'no reason given') : null,
    };
  });
}

/** One line per problem: its checks ("- ST103 Undocumented status code") and what was received. */
function headline(problem: string): string {
  const checks = problem.match(/^- .+$/gm)?.map((l) => l.slice(2)) ?? [problem.split('\n')[0]!];
  const received = /^\s*Received: (.+)$/m.exec(problem)?.[1];
  return `${checks.join('; ')}${received ? ` (received ${received})` : ''}`;
}

/**
 * Every operation /openapi.json lists, named the way schemathesis names them, less GET
 * /openapi.json: schemathesis leaves out the operation that serves the document it reads.
 */
async function operations(server: Server): Promise<string[]> {
  const doc = (await server.call('/openapi.json')).json as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths)
    .flatMap(([p, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${p}`))
    .filter((op) => op !== 'GET /openapi.json');
}

function config(key: string): string {
  const s = JSON.stringify; // a JSON string is a TOML basic string
  return `
# One worker: with two, Hypothesis's lambda descriptions race in CPython 3.11's ast module
# ("SystemError: AST constructor recursion depth mismatch"), and the server's two cores are the limit.
workers = 1
# A decision queued behind others on a loaded CPU.
request-timeout = 60
generation.max-examples = 60

[headers]
Authorization = ${s(`Bearer ${key}`)}
X-Arbitra-Console-Token = ${s(CONSOLE_TOKEN)}
X-Arbitra-User-Email = ${s(CONSOLE_USER)}

# Each request the model answers takes 0.1-2 s on CPU, so decisions get few examples. The coverage
# phase's boundary cases, refused before the model, already cover the invalid side, so fuzzing
# spends them on valid requests: the ones whose 200 bodies get checked against the schema.
[[operations]]
include-path = "/v1/systemone"
generation.max-examples = 10
phases.fuzzing.generation.mode = "positive"
`;
}

/** Runs schemathesis in `dir` until it exits or its budget is spent (then interrupts it, so it still reports). */
function fuzz(dir: string, url: string): Promise<{ code: number | null; out: string; interrupted: boolean; seconds: number }> {
  const started = Date.now();
  const child = spawn(
    SCHEMATHESIS,
    [
      '--config-file',
      'schemathesis.toml',
      'run',
      `${url}/openapi.json`,
      '--checks',
      CHECKS.join(','),
      '--continue-on-failure',
      '--report',
      'junit',
      '--report-junit-path',
      'junit.xml',
      '--no-color',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  let interrupted = false;
  const budget = setTimeout(() => {
    interrupted = true;
    child.kill('SIGINT');
    setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
  }, BUDGET_S * 1000);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(budget);
      resolve({ code, out, interrupted, seconds: (Date.now() - started) / 1000 });
    });
  });
}

async function fuzzTransport(t: TapTest, transport: 'uws' | 'node'): Promise<void> {
  const dir = t.testdir();
  const server = await startServer(dir, { workers: 2, env: { ARBITRA_HTTP: transport } });
  t.teardown(() => server.stop());
  const synced = await server.call('/v1/console/users/sync', { body: { name: 'Fuzzer' }, headers: server.console(CONSOLE_USER) });
  t.equal(synced.status, 200, `console user ${CONSOLE_USER} created`, { body: synced.text });
  const { secret } = await server.createKey(KEY_OWNER);
  fs.writeFileSync(path.join(dir, 'schemathesis.toml'), config(secret));

  const run = await fuzz(dir, server.url);
  const summary = [/^\s*\d+ generated.*$/m.exec(run.out)?.[0]?.trim(), /^Seed: \d+$/m.exec(run.out)?.[0]].filter(Boolean).join(', ');
  t.comment(`schemathesis on ${transport}: ${run.seconds.toFixed(0)} s, ${summary || 'no summary'}`);
  t.notOk(run.interrupted, `finished within ${BUDGET_S} s`);

  const report = path.join(dir, 'junit.xml');
  const outcomes = fs.existsSync(report) ? readJunit(fs.readFileSync(report, 'utf8')) : [];
  t.same(outcomes.map((o) => o.operation).sort(), (await operations(server)).sort(), 'every other operation in /openapi.json was fuzzed');
  for (const { operation, problems, skipped } of outcomes) {
    // An interrupted run leaves the operations it did not reach skipped; the budget's failure says so.
    if (skipped && !run.interrupted) t.fail(`${operation}: not fuzzed (${skipped})`);
    else if (!problems.length) t.pass(operation);
    for (const problem of problems) t.fail(`${operation}: ${headline(problem)}`, { found: problem });
  }
  // A run that failed without a failure in the report (a crash, a schema it could not load) says why on its output.
  const reported = outcomes.some((o) => o.problems.length);
  t.equal(run.code, 0, 'schemathesis exits 0', reported ? {} : { output: run.out.slice(-6000) });

  t.equal((await server.call('/v1/models', { key: secret })).status, 200, 'the key the fuzzer used still works');
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else if (!fs.existsSync(SCHEMATHESIS)) {
  // Not a skip: the fuzzer's environment is part of the test setup, so its absence is a broken setup.
  t.fail(`${path.relative(root, SCHEMATHESIS)} is missing: run node scripts/fuzz-env.mjs (npm test runs it before tap)`);
} else {
  for (const transport of ['uws', 'node'] as const) t.test(`transport ${transport}`, (t) => fuzzTransport(t, transport));
}
