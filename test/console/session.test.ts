// The browser console's signed session cookie and how consoleIdentity takes it in place of the
// console headers: pure functions, no server.
import t from 'tap';
import { consoleIdentity } from '../../src/api/auth.js';
import { ApiError } from '../../src/api/errors.js';
import { ConsoleSessions, crossOrigin, SESSION_COOKIE, SESSION_SECONDS, sessionCookie } from '../../src/api/console-session.js';
import { createSecretThrottle } from '../../src/api/secret-throttle.js';
import { loadLimitsConfig } from '../../src/limits/config.js';
import { openStore } from '../../src/store/index.js';
import { fakeRequest } from './helpers.js';

const TOKEN = 'unit-console-token-0123456789';
const NOW = Date.parse('2026-11-25T12:00:00Z');

const req = (headers: Record<string, string>) => fakeRequest(headers);

const valueOf = (setCookie: string) => /^arbitra_console=([^;]*)/.exec(setCookie)![1]!;

t.test('a session reads back only as issued, only under its token, only until it expires', async (t) => {
  const sessions = new ConsoleSessions(TOKEN);
  const issued = sessions.issue('ada@example.eu', NOW, false);
  const value = valueOf(issued.setCookie);
  const read = sessions.read(value, NOW + 1000);
  t.equal(read?.email, 'ada@example.eu');
  t.equal(read?.csrf, issued.csrf, 'the CSRF token is derived from the cookie, so it reads back the same');
  t.equal(read?.expiresAt, NOW + SESSION_SECONDS * 1000);
  t.equal(sessions.read(value, NOW + SESSION_SECONDS * 1000), null, 'expired at its end');
  t.equal(new ConsoleSessions('another-console-token-01234').read(value, NOW), null, 'a rotated console token ends every session');

  const [payload, mac] = value.split('.') as [string, string];
  const forged = Buffer.from(JSON.stringify({ e: 'eve@example.eu', x: NOW + 1e9, n: 'x' })).toString('base64url');
  t.equal(sessions.read(`${forged}.${mac}`, NOW), null, 'another payload under the same signature is refused');
  t.equal(sessions.read(`${payload}.${mac.slice(0, -2)}AA`, NOW), null, 'a changed signature is refused');
  for (const junk of ['', '.', 'abc', `${payload}.`, `.${mac}`]) t.equal(sessions.read(junk, NOW), null, `junk ${JSON.stringify(junk)} is refused`);

  const other = sessions.issue('ada@example.eu', NOW, false);
  t.not(other.csrf, issued.csrf, 'two sign-ins have different CSRF tokens');
  t.not(valueOf(other.setCookie), value, 'and different cookies');
});

t.test('the cookie is HttpOnly, SameSite=Strict, site-wide, Secure only over HTTPS', async (t) => {
  const sessions = new ConsoleSessions(TOKEN);
  const plain = sessions.issue('ada@example.eu', NOW, false).setCookie;
  t.match(plain, /; HttpOnly/);
  t.match(plain, /; SameSite=Strict/);
  t.match(plain, /; Path=\//);
  t.match(plain, new RegExp(`; Max-Age=${SESSION_SECONDS}`));
  t.notMatch(plain, /Secure/);
  t.match(sessions.issue('ada@example.eu', NOW, true).setCookie, /; Secure$/);
});

t.test('the session cookie is found among others', async (t) => {
  t.equal(sessionCookie(req({ cookie: `a=1; ${SESSION_COOKIE}=abc.def; b=2` })), 'abc.def');
  t.equal(sessionCookie(req({ cookie: 'a=1; xarbitra_console=zzz' })), undefined);
  t.equal(sessionCookie(req({})), undefined);
});

t.test('a request from another site is told apart by its Origin', async (t) => {
  t.notOk(crossOrigin(req({ host: 'localhost:8080' })), 'no Origin: a same-origin GET or a non-browser client');
  t.notOk(crossOrigin(req({ host: 'localhost:8080', origin: 'http://localhost:8080' })));
  t.ok(crossOrigin(req({ host: 'localhost:8080', origin: 'http://evil.example' })));
  t.ok(crossOrigin(req({ host: 'localhost:8080', origin: 'null' })), 'an opaque origin is foreign');
  const proxied = { host: '10.0.0.2:8080', 'x-forwarded-host': 'arbitra.example.eu', origin: 'https://arbitra.example.eu' };
  t.notOk(crossOrigin(fakeRequest(proxied, { host: 'arbitra.example.eu' })), 'behind a trusted proxy, the host it forwarded');
  t.ok(crossOrigin(req(proxied)), "a client's own X-Forwarded-Host is not believed");
});

t.test('consoleIdentity takes a session with its CSRF header in place of the console headers', async (t) => {
  const store = await openStore(t.testdir());
  t.teardown(() => store.close());
  const throttle = createSecretThrottle(store, loadLimitsConfig({}));
  const issued = new ConsoleSessions(TOKEN).issue('ada@example.eu', Date.now(), false);
  const cookie = `${SESSION_COOKIE}=${valueOf(issued.setCookie)}`;
  t.same(await consoleIdentity(req({ cookie, 'x-arbitra-csrf': issued.csrf, host: 'h' }), TOKEN, throttle), { email: 'ada@example.eu' });
  const refusal = (headers: Record<string, string>, token: string | undefined): Promise<string> =>
    consoleIdentity(req(headers), token, throttle).then(
      () => 'accepted',
      (err: unknown) => (err instanceof ApiError ? `${err.code}: ${err.message}` : String(err)),
    );
  t.match(await refusal({ cookie }, TOKEN), /^forbidden: .*x-arbitra-csrf/, 'no CSRF header');
  t.match(await refusal({ cookie, 'x-arbitra-csrf': 'wrong' }, TOKEN), /^forbidden/, 'a wrong CSRF header');
  t.match(await refusal({ cookie, 'x-arbitra-csrf': issued.csrf, host: 'h', origin: 'http://evil.example' }, TOKEN), /^forbidden: .*another site/);
  t.match(await refusal({ cookie: `${SESSION_COOKIE}=forged.value`, 'x-arbitra-csrf': issued.csrf }, TOKEN), /^authentication_error: .*sign in again/);
  t.equal(await refusal({ cookie, 'x-arbitra-csrf': issued.csrf }, TOKEN), 'accepted', 'no Host and no Origin: a same-origin call');
  t.match(
    await refusal(
      {
        cookie: `${SESSION_COOKIE}=${valueOf(new ConsoleSessions('another-console-token-01234').issue('ada@example.eu', Date.now(), false).setCookie)}`,
      },
      TOKEN,
    ),
    /^authentication_error/,
    'a session of another console token',
  );
  t.match(
    await refusal({ cookie, 'x-arbitra-csrf': issued.csrf }, undefined),
    /ARBITRA_CONSOLE_TOKEN.*at least 16 characters/,
    'a closed console takes no session',
  );
});
