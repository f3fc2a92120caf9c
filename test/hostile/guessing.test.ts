// A guesser against the real server (test model, LMDB, two HTTP workers), on both HTTP fronts:
// wrong console tokens and API keys from one address are refused with 429 long before 100, wherever
// the secret is taken, while the right secret from another address still works; the client's
// address comes from X-Forwarded-For only when a trusted proxy sends it; the session cookie is
// Secure only when that proxy says the client came over TLS.
//
// The server trusts 127.0.0.2 as its proxy. Loopback holds all of 127/8, so a request sent from
// 127.0.0.2 is "the proxy" naming whatever client its X-Forwarded-For says, and one sent from
// 127.0.0.1 is a client the server does not trust, whose X-Forwarded-For must change nothing.
import http from 'node:http';
import t, { type Test } from 'tap';
import { cannotRun, CONSOLE_TOKEN, startServer, type Server } from '../integration/helpers/server.js';
import { LIMITS_DEFAULTS } from '../../src/limits/config.js';

const PROXY = '127.0.0.2';
const GUESSES = 100;
const LIMIT = LIMITS_DEFAULTS.secretFailureLimit;
const WINDOW_MS = LIMITS_DEFAULTS.secretFailureWindowSeconds * 1000;
const EMAIL = 'operator@example.eu';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: any;
}

interface Send {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** The proxy, naming this client in X-Forwarded-For; without it the request comes from 127.0.0.1 itself. */
  client?: string;
}

/** One request on a fresh connection from 127.0.0.1, or from the proxy's address on behalf of `client`. */
function send(server: Server, path: string, opts: Send = {}): Promise<Reply> {
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (opts.client !== undefined) headers['x-forwarded-for'] = opts.client;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method: opts.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        localAddress: opts.client === undefined ? '127.0.0.1' : PROXY,
        // A connection of its own: a pooled one would carry the next request from the wrong address.
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Sends up to GUESSES wrong secrets one after another (stopping at the first 429 when `untilRefused`);
 * how many were answered 401 before the first 429, and the statuses from it on.
 */
async function guess(
  attempt: (i: number) => Promise<Reply>,
  untilRefused = false,
): Promise<{ answeredWrong: number; after: Set<number>; retryAfter: string | undefined }> {
  // The failures are counted in fixed windows on the clock's multiples of their length: guesses
  // that spanned an edge would be counted afresh after it (a fresh-clone run answered 22 wrong keys,
  // 2 before an edge). So a run does not start in a window's last seconds.
  const left = WINDOW_MS - (Date.now() % WINDOW_MS);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
  const statuses: number[] = [];
  let retryAfter: string | undefined;
  for (let i = 0; i < GUESSES; i++) {
    const r = await attempt(i);
    statuses.push(r.status);
    if (r.status === 429) retryAfter ??= r.headers['retry-after'];
    if (untilRefused && r.status === 429) break;
  }
  const first = statuses.indexOf(429);
  return { answeredWrong: first < 0 ? statuses.length : first, after: new Set(first < 0 ? [] : statuses.slice(first)), retryAfter };
}

const consoleHeaders = (token: string) => ({ 'x-arbitra-console-token': token, 'x-arbitra-user-email': EMAIL });

interface SecretRoute {
  kind: 'API key' | 'console token';
  method: string;
  path: string;
  /** The i-th guess's body and headers. */
  guess: (i: number) => { body?: unknown; headers: Record<string, string> };
}

const wrongKey = (body?: unknown) => (i: number) => ({ body, headers: { authorization: `Bearer arb_wrong${i}` } });
const wrongToken = (body?: unknown) => (i: number) => ({ body, headers: consoleHeaders(`wrong-console-token-${i}`) });

/** Every route that takes an API key or the console token. */
const SECRET_ROUTES: SecretRoute[] = [
  { kind: 'API key', method: 'POST', path: '/v1/systemone', guess: wrongKey({ state: 'x', questions: { q: { type: 'noul', question: 'y?' } } }) },
  { kind: 'API key', method: 'GET', path: '/v1/models', guess: wrongKey() },
  { kind: 'API key', method: 'POST', path: '/v1/traces', guess: wrongKey({ request_id: 'so_x', outcome: true }) },
  { kind: 'API key', method: 'DELETE', path: '/v1/retention/so_x', guess: wrongKey() },
  { kind: 'console token', method: 'GET', path: '/v1/console/account', guess: wrongToken() },
  { kind: 'console token', method: 'GET', path: '/v1/console/api-keys', guess: wrongToken() },
  { kind: 'console token', method: 'POST', path: '/v1/console/api-keys', guess: wrongToken({ name: 'x' }) },
  { kind: 'console token', method: 'DELETE', path: '/v1/console/api-keys/key_x', guess: wrongToken() },
  { kind: 'console token', method: 'GET', path: '/v1/console/usage', guess: wrongToken() },
  { kind: 'console token', method: 'POST', path: '/v1/console/users/sync', guess: wrongToken({}) },
  { kind: 'console token', method: 'POST', path: '/v1/console/verification-tokens', guess: wrongToken({}) },
  { kind: 'console token', method: 'POST', path: '/v1/console/verification-tokens/use', guess: wrongToken({ token: 'avt_x' }) },
  { kind: 'console token', method: 'GET', path: '/console/api/model', guess: wrongToken() },
  { kind: 'console token', method: 'DELETE', path: '/console/session', guess: wrongToken() },
  {
    kind: 'console token',
    method: 'POST',
    path: '/console/session',
    guess: (i) => ({ body: { token: `wrong-console-token-${i}`, email: EMAIL }, headers: {} }),
  },
];

for (const front of ['uws', 'node'] as const) {
  t.test(`front ${front}`, { skip: cannotRun }, async (t) => {
    const server = await startServer(t.testdir(), { env: { ARBITRA_HTTP: front, ARBITRA_TRUSTED_PROXIES: PROXY } });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey(EMAIL);

    /** 100 wrong secrets from `guesser`, then the right one from `guesser` and from `other`. */
    async function holds(
      t: Test,
      what: string,
      guesser: string,
      other: string,
      wrong: (i: number, client: string) => Promise<Reply>,
      right: (client: string) => Promise<Reply>,
    ) {
      const g = await guess((i) => wrong(i, guesser));
      t.comment(`${front}: ${what}: ${g.answeredWrong} of ${GUESSES} wrong secrets answered before the first 429`);
      t.equal(g.answeredWrong, LIMIT, `${what}: ${LIMIT} answered 401, then refused`);
      t.same([...g.after], [429], `${what}: every guess after that is 429`);
      t.ok(Number(g.retryAfter) >= 1, `${what}: with Retry-After ${g.retryAfter}`);
      t.equal((await right(guesser)).status, 429, `${what}: the right secret from the guessing address is refused too`);
      t.equal((await right(other)).status, 200, `${what}: the right secret from another address works`);
    }

    t.test('console token on GET /v1/console/account', async (t) => {
      await holds(
        t,
        'GET /v1/console/account',
        '203.0.113.1',
        '203.0.113.2',
        (i, client) => send(server, '/v1/console/account', { client, headers: consoleHeaders(`wrong-console-token-${i}`) }),
        (client) => send(server, '/v1/console/account', { client, headers: consoleHeaders(CONSOLE_TOKEN) }),
      );
    });

    t.test('API keys on GET /v1/models', async (t) => {
      await holds(
        t,
        'GET /v1/models',
        '2001:db8:1:1::1',
        '2001:db8:1:2::1',
        (i, client) => send(server, '/v1/models', { client, headers: { authorization: `Bearer arb_wrong${i}` } }),
        (client) => send(server, '/v1/models', { client, headers: { authorization: `Bearer ${secret}` } }),
      );
    });

    t.test('console token on GET /console/api/model', async (t) => {
      await holds(
        t,
        'GET /console/api/model',
        '203.0.113.3',
        '203.0.113.4',
        (i, client) => send(server, '/console/api/model', { client, headers: consoleHeaders(`wrong-console-token-${i}`) }),
        (client) => send(server, '/console/api/model', { client, headers: consoleHeaders(CONSOLE_TOKEN) }),
      );
    });

    t.test('every route that takes a secret, each guessed from an address of its own', async (t) => {
      for (const [j, r] of SECRET_ROUTES.entries()) {
        const client = `198.51.100.${j + 1}`;
        const g = await guess((i) => send(server, r.path, { method: r.method, client, ...r.guess(i) }), true);
        t.comment(`${front}: ${r.method} ${r.path}: ${g.answeredWrong} wrong ${r.kind}s answered before the first 429`);
        t.equal(g.answeredWrong, LIMIT, `${r.method} ${r.path}: refused after ${LIMIT} wrong ${r.kind}s`);
      }
    });

    t.test('one count per address, whichever route the guesses go to', async (t) => {
      for (const [j, kind] of (['API key', 'console token'] as const).entries()) {
        const routes = SECRET_ROUTES.filter((r) => r.kind === kind);
        const g = await guess((i) => {
          const r = routes[i % routes.length]!;
          return send(server, r.path, { method: r.method, client: `198.51.100.${200 + j}`, ...r.guess(i) });
        });
        t.equal(g.answeredWrong, LIMIT, `${kind}s spread over ${routes.length} routes: ${g.answeredWrong} answered before the first 429`);
      }
    });

    t.test('without a trusted proxy in between, X-Forwarded-For changes nothing', async (t) => {
      // From 127.0.0.1, which is no trusted proxy: a new forged address on every guess.
      const g = await guess((i) =>
        send(server, '/v1/traces', {
          body: { request_id: 'so_x', outcome: true },
          headers: { authorization: `Bearer arb_wrong${i}`, 'x-forwarded-for': `192.0.2.${i}` },
        }),
      );
      t.equal(g.answeredWrong, LIMIT, 'the guesses are counted against the peer, whatever address they claim');
      t.equal(
        (await send(server, '/v1/models', { client: '192.0.2.1', headers: { authorization: `Bearer ${secret}` } })).status,
        200,
        'and not against the claimed ones',
      );
    });

    t.test('the session cookie is Secure only when a trusted proxy says the client came over TLS', async (t) => {
      const signIn = (opts: Send) => send(server, '/console/session', { ...opts, body: { token: CONSOLE_TOKEN, email: EMAIL } });
      const cookie = (r: Reply) => String(r.headers['set-cookie'] ?? '');
      const tls = await signIn({ client: '203.0.113.50', headers: { 'x-forwarded-proto': 'https' } });
      t.equal(tls.status, 200);
      t.match(cookie(tls), /; Secure/, 'HTTPS at the proxy: Secure');
      const plain = await signIn({ client: '203.0.113.50' });
      t.equal(plain.status, 200);
      t.notMatch(cookie(plain), /Secure/, 'plain HTTP at the proxy: not Secure, so the browser sends it back');
      const claimed = await signIn({ headers: { 'x-forwarded-proto': 'https' } });
      t.equal(claimed.status, 200);
      t.notMatch(cookie(claimed), /Secure/, 'a client claiming HTTPS itself is not believed');
    });
  });
}
