// jevcompat, the public conformance suite for servers of TypeSafe's System One API (pinned in
// test/integration/python/requirements.txt and installed into .venv-sdk/ by scripts/python-sdk.mjs,
// which `npm test` runs before tap), pointed at `arbitra serve` with an API key, unmodified. Every
// MUST has to pass, and every SHOULD except those our interface spec (../shared/spec/interface.md)
// contradicts; each of those is named below with the reason, and must still fail only that way.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { PYTHON, venvMissing, withoutTypesafeEnv } from './helpers/python.js';
import { cannotRun, startServer } from './helpers/server.js';

// The key reaches jevcompat only through its environment, never its command line or our output.
const KEY_VAR = 'ARBITRA_JEVCOMPAT_KEY';

/** The report `jevcompat test --json` writes, as far as the asserts read it (jevcompat/runner.py). */
interface Finding {
  req: string;
  message: string;
  where: string;
  case: string;
  /** Index into exchanges. */
  exchange: number | null;
}
interface Requirement {
  id: string;
  level: 'MUST' | 'SHOULD';
  title: string;
  status: 'pass' | 'fail' | 'skip';
  findings: Finding[];
  reason: string;
}
interface Report {
  spec_version: string;
  seconds: number;
  results: Requirement[];
  exchanges: { method: string; path: string; status: number | null; response: string }[];
  aborted: string | null;
  case_errors: [string, string][];
  inconclusive: string[];
  summary: { verdict: string; untested_musts: string[] };
}

// jevcompat tests exactly one of its two auth MUSTs: auth.bearer when the server wants a key.
const NOT_APPLICABLE: Record<string, string> = {
  'auth.ignored-when-off': 'it covers servers that run without keys; every Arbitra decision needs one, so auth.bearer is tested in its place',
};

// The unprefixed fields a response may carry: the interface's own, and label_mass.
const KNOWN_FIELDS = new Set(['id', 'meta', 'retention', 'confidence_band', 'raw_noul', 'raw_probabilities', 'debias_passes', 'label_mass']);

/**
 * SHOULDs the interface contradicts. `explains` picks the findings the reason accounts for, so an
 * exception never hides a second way of failing the same requirement.
 */
const CONTRADICTED: Record<string, { reason: string; explains: (f: Finding) => boolean }> = {
  'score.map-rejected': {
    reason:
      'the interface allows score criteria as an object ("ScoreQuestion criteria: array, object, string, or null"), so a score question with {"0": …, "1": …, "2": …} is valid and answered',
    explains: (f) => f.case === 'invalid:score-map',
  },
  'errors.reject-invalid': {
    reason:
      'two of the requests jevcompat calls invalid are valid under the interface: a question without "type" is a noul ("NoulQuestion: type noul (default noul)"), and score criteria may be an object',
    explains: (f) => f.case === 'invalid:missing-type' || f.case === 'invalid:score-map',
  },
  'response.extensions': {
    reason:
      'the interface requires "id" on SystemOneResponse and defines "meta" and "retention" beside it, and confidence_band, raw_noul, ' +
      'raw_probabilities and debias_passes on answers, none of them prefixed x_ (the one other unprefixed field is label_mass, ' +
      "Arbitra's documented extension on every answer)",
    explains: (f) => {
      const fields = /^unprefixed (?:top-level )?field\(s\) (.+)$/.exec(f.message)?.[1]?.split(', ') ?? [];
      return fields.length > 0 && fields.every((name) => KNOWN_FIELDS.has(name));
    },
  },
};

/** jevcompat's evidence for one finding, as its terminal report prints it, with the reply it judged. */
function evidence(report: Report, f: Finding): string {
  const x = f.exchange === null ? undefined : report.exchanges[f.exchange];
  const reply = x ? ` [${x.method} ${x.path} → ${x.status ?? 'no response'}: ${x.response.slice(0, 300)}]` : '';
  return `${f.case}${f.where ? ` ${f.where}` : ''}: ${f.message}${reply}`;
}

/** Why a requirement did not pass, in jevcompat's words: its first findings, or why it was not tested. */
function why(report: Report, r: Requirement): string {
  if (r.status === 'skip') return r.reason;
  const shown = r.findings.slice(0, 3).map((f) => evidence(report, f));
  if (r.findings.length > shown.length) shown.push(`… ${r.findings.length - shown.length} more`);
  return shown.join('\n');
}

/** `jevcompat test` with the key in its environment; resolves whatever its exit code says (the report holds the verdict). */
function jevcompat(url: string, key: string, json: string): Promise<{ code: number; output: string }> {
  // jevcompat hands the SDK its key, URL and model itself; without the caller's TYPESAFE_*
  // variables (a log level, say) the run is the same on every machine.
  const env = withoutTypesafeEnv();
  env[KEY_VAR] = key;
  return new Promise((resolve) => {
    execFile(PYTHON, ['-m', 'jevcompat.cli', 'test', url, '--key-env', KEY_VAR, '--json', json], { env, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else if (venvMissing()) {
  t.fail(venvMissing()!);
} else {
  t.test('jevcompat against arbitra serve with an API key', async (t) => {
    const dir = t.testdir();
    // One process is enough: jevcompat sends one request at a time. The self-hosted limits (the
    // default) have no daily allowance, and their per-key rate is far above a serial client. The
    // default lanes: jevcompat's 255-option choices are longer than the main lane.
    const server = await startServer(dir, { workers: 0, lanes: 'default' });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('jevcompat@example.com');

    const json = path.join(dir, 'jevcompat.json');
    const { code, output } = await jevcompat(server.url, secret, json);
    if (!fs.existsSync(json)) {
      t.fail(`jevcompat exited ${code} without a report:\n${output.split(secret).join('<key>')}`);
      return;
    }
    const text = fs.readFileSync(json, 'utf8');
    t.notOk(output.includes(secret) || text.includes(secret), "the key appears nowhere in jevcompat's output or report");
    const report: Report = JSON.parse(text);
    t.comment(`jevcompat: ${report.summary.verdict}, ${report.results.length} requirements, ${report.exchanges.length} requests in ${report.seconds} s`);
    t.equal(report.spec_version, '0.1', 'the exceptions below were judged against spec 0.1');
    t.equal(report.summary.verdict, 'conformant', 'every applicable MUST passed and every request was answered in time', {
      aborted: report.aborted,
      untested_musts: report.summary.untested_musts,
      inconclusive: report.inconclusive,
      case_errors: report.case_errors,
    });

    const byId = new Map(report.results.map((r) => [r.id, r]));
    for (const id of Object.keys(NOT_APPLICABLE)) t.equal(byId.get(id)?.level, 'MUST', `${id} is one of jevcompat's MUSTs`);
    for (const id of Object.keys(CONTRADICTED)) t.equal(byId.get(id)?.level, 'SHOULD', `${id} is one of jevcompat's SHOULDs`);

    for (const r of report.results) {
      const name = `${r.level} ${r.id} (${r.title})`;
      const notApplicable = r.level === 'MUST' ? NOT_APPLICABLE[r.id] : undefined;
      const contradicted = r.level === 'SHOULD' ? CONTRADICTED[r.id] : undefined;
      if (notApplicable) {
        t.equal(r.status, 'skip', `${name} is not tested: ${notApplicable}${r.status === 'fail' ? ` (yet it failed: ${why(report, r)})` : ''}`);
      } else if (contradicted) {
        const now = r.status === 'pass' ? ' (it passes now: drop the exception)' : r.status === 'skip' ? ` (not tested: ${r.reason})` : '';
        t.equal(r.status, 'fail', `${name} fails because the interface says otherwise: ${contradicted.reason}${now}`);
        const unexplained = r.findings.filter((f) => !contradicted.explains(f)).map((f) => evidence(report, f));
        t.same(unexplained, [], `${name} fails in no other way`);
      } else {
        t.equal(r.status, 'pass', r.status === 'pass' ? name : `${name}: ${why(report, r)}`);
      }
    }
  });
}
