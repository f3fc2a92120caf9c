// docs/security.md's table of the bounds a request meets is held to the code: each row's default is
// the value the code enforces, so the page a security reviewer reads first cannot drift.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { MAX_ASSET_BYTES, MAX_ASSETS } from '../../src/api/assets.js';
import { MAX_JSON_DEPTH } from '../../src/api/json-guard.js';
import { MAX_PARTS } from '../../src/api/multipart.js';
import { MAX_IDEMPOTENCY_KEY } from '../../src/api/routes/systemone.js';
import { MAX_TRACE_METADATA_BYTES, MAX_TRACES_PER_REQUEST } from '../../src/api/routes/traces.js';
import { STRENGTH_FLOOR_BITS } from '../../src/cluster/secrets.js';
import { CHOICE_LABELS } from '../../src/decision/kinds/choice.js';
import { SCORE_LEVELS } from '../../src/decision/kinds/score.js';
import { INPUT_PREVIEW_CHARS, MAX_LISTED_BYTES, MAX_LISTED_PROBLEMS, MAX_MESSAGE_CHARS } from '../../src/decision/schema/problems.js';
import { PROOF_FAILURES_PER_MINUTE } from '../../src/engine/rpc/throttle.js';
import { MAX_MESSAGE_BYTES } from '../../src/engine/rpc/codec.js';
import { PORT_BOUNDS } from '../../src/engine/rpc/port.js';
import { MAX_CONCURRENT_STREAMS } from '../../src/engine/rpc/server.js';
import { MAX_CODINGS } from '../../src/http/content-encoding.js';
import { LINGER_BODY_FACTOR, LINGER_SECONDS } from '../../src/http/linger.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/http/pipeline.js';
import { LIMITS_DEFAULTS } from '../../src/limits/config.js';
import { DEFAULT_MAX_KEYS_PER_USER } from '../../src/store/common.js';

const page = fs.readFileSync(path.join(fileURLToPath(new URL('../../', import.meta.url)), 'docs/security.md'), 'utf8');
const section = page.slice(page.indexOf('## Every bound a request meets'), page.indexOf('## What is not promised'));
const rows = new Map(
  section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| bound ') && !l.startsWith('|---'))
    .map((l) => {
      const cells = l.split('|').map((c) => c.trim());
      return [cells[1]!, cells[2]!] as const;
    }),
);

const d = LIMITS_DEFAULTS;
const expected: [string, number][] = [
  ['body bytes, on the wire and decoded', DEFAULT_MAX_BODY_BYTES],
  ['bytes read and dropped after a 413, as a multiple of the body limit', LINGER_BODY_FACTOR],
  ['seconds a refused body is read and dropped', LINGER_SECONDS],
  ['content codings on one body', MAX_CODINGS],
  ['JSON nesting depth', MAX_JSON_DEPTH],
  ['form parts of a multipart body', MAX_PARTS],
  ['requests a minute from one address, on routes without a key', d.ipRequestsPerMinute],
  ['wrong secrets from one address in a window', d.secretFailureLimit],
  ['seconds of that window', d.secretFailureWindowSeconds],
  ['problems a 422 lists', MAX_LISTED_PROBLEMS],
  ['bytes of the problems a 422 lists', MAX_LISTED_BYTES],
  ['characters of a message or text in an error', MAX_MESSAGE_CHARS],
  ["characters of an echoed input's preview", INPUT_PREVIEW_CHARS],
  ['characters of an Idempotency-Key', MAX_IDEMPOTENCY_KEY],
  ['questions a decision asks', d.maxQuestions],
  ['scored branches of a decision (questions × passes)', d.maxBranches],
  ['labels of a choice question', CHOICE_LABELS.max],
  ['levels of a score question', SCORE_LEVELS.max],
  ['assets of a decision', MAX_ASSETS],
  ['bytes of one image asset', MAX_ASSET_BYTES],
  ['traces in one request', MAX_TRACES_PER_REQUEST],
  ["bytes of one trace's metadata", MAX_TRACE_METADATA_BYTES],
  ['decisions a second per key', d.requestsPerSecond],
  ['decisions in flight per key', d.maxInFlight],
  ['seconds a decision may run', d.requestDeadlineSeconds],
  ['traces one key keeps', d.tracesMax],
  ['bytes of traces one key keeps', d.tracesMaxBytes],
  ['idempotency entries per key', d.idempotencyMax],
  ['idempotency entries of all keys', d.idempotencyMaxTotal],
  ['active API keys per user', DEFAULT_MAX_KEYS_PER_USER],
  ['bytes of an engine call', MAX_MESSAGE_BYTES],
  ['connections to an engine port', PORT_BOUNDS.connections],
  ['connections to an engine port from one address', PORT_BOUNDS.perAddress],
  ['milliseconds an engine connection may stay without a proven call', PORT_BOUNDS.proveWithinMs],
  ['calls at once on one engine connection', MAX_CONCURRENT_STREAMS],
  ['failed engine proofs a minute from one address', PROOF_FAILURES_PER_MINUTE],
  ['bits a secret is worth beyond loopback', STRENGTH_FLOOR_BITS],
];

t.test('every default in the table is the value the code enforces', async (t) => {
  for (const [bound, value] of expected) t.equal(rows.get(bound), value.toLocaleString('en-US'), bound);
});

t.test('the table names no bound the code does not hold it to', async (t) => {
  const held = new Set(expected.map(([bound]) => bound));
  t.same(
    [...rows.keys()].filter((bound) => !held.has(bound)),
    [],
  );
});
