// The browser console in a real headless Chromium against a real `arbitra serve` (test model, LMDB):
// sign-in, keys, the playground's probability bars, usage, revocation, engines and the model's
// figures; the session's cookie and CSRF defences; text that looks like markup staying text; and
// the page's CSP holding, with every page screenshotted into screenshots/console/ for a reviewer.
import t from 'tap';
import type { Browser, Page } from 'puppeteer-core';
import { cannotRun, CONSOLE_TOKEN, startServer, type Server } from '../integration/helpers/server.js';
import { launch, openPage, screenshot, type WatchedPage } from './browser.js';

const EMAIL = 'ada@example.eu';
const XSS_NAME = '<img src=x onerror="window.__pwned=1">';
const XSS_STATE = 'Customer wrote: <script>window.__pwned=2</script> "The blender broke after a week, I want my money back."';

/** What the browser complained about, less the 4xx answers the tests provoke on purpose. */
const serious = (w: WatchedPage) => w.complaints.filter((c) => !/Failed to load resource: the server responded with a status of 4\d\d/.test(c));

const text = (page: Page, selector: string) => page.$eval(selector, (el) => (el as HTMLElement).innerText.trim());

async function waitText(page: Page, selector: string, pattern: RegExp, timeout = 30_000): Promise<string> {
  await page.waitForFunction(
    (sel: string, source: string) => {
      const el = document.querySelector<HTMLElement>(sel);
      return !!el && new RegExp(source).test(el.innerText);
    },
    { timeout },
    selector,
    pattern.source,
  );
  return text(page, selector);
}

/**
 * Visible text whose contrast with the background behind it is under WCAG AA (4.5:1, or 3:1 for
 * large text). Runs in the page, so it must be self-contained.
 */
function lowContrastText(): string[] {
  const rgb = (css: string): number[] => (css.match(/[\d.]+/g) ?? []).map(Number);
  const luminance = ([r, g, b]: number[]) => {
    const lin = (c: number) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * lin(r!) + 0.7152 * lin(g!) + 0.0722 * lin(b!);
  };
  const background = (el: Element | null): number[] => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c[3] ?? 1) > 0.5) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const found: string[] = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.textContent?.trim() || el.closest('canvas, .u-legend, [hidden]') || el.getClientRects().length === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || Number(style.opacity) === 0) continue;
    const [fg, bg] = [luminance(rgb(style.color)), luminance(background(el))];
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) found.push(`${node.textContent.trim().slice(0, 40)} (${ratio.toFixed(2)}:1)`);
  }
  return [...new Set(found)];
}

async function go(page: Page, hash: string, section: string): Promise<void> {
  await page.evaluate((h: string) => (location.hash = h), hash);
  await page.waitForSelector(section, { visible: true });
}

t.test('the browser console', { skip: cannotRun }, async (t) => {
  // A cap of two keys, so the page's refusal of a third can be seen in the API's words.
  const server: Server = await startServer(t.testdir(), { workers: 2, env: { ARBITRA_MAX_KEYS_PER_USER: '2', ARBITRA_DETERMINISM_CHECK: 'on' } });
  t.teardown(() => server.stop());
  const browser: Browser = await launch();
  t.teardown(() => browser.close());
  const watched = await openPage(browser);
  const { page } = watched;
  const origin = server.url;

  await t.test('the page and its assets carry a strict CSP and are cached by hash', async (t) => {
    const res = await fetch(`${origin}/console`);
    t.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /script-src 'self'/);
    t.match(csp, /frame-ancestors 'none'/);
    t.match(csp, /default-src 'none'/);
    t.notMatch(csp, /unsafe-inline|unsafe-eval/);
    t.equal(res.headers.get('x-frame-options'), 'DENY');
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    t.equal(res.headers.get('cache-control'), 'no-cache');
    const html = await res.text();
    t.notMatch(html, /<script>|<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son\w+=/i, 'no inline script, style or handler in the shell');
    const app = /src="(\/console\/assets\/[0-9a-f]{16}\/app\.js)"/.exec(html)?.[1];
    t.ok(app, 'the script is named by the assets hash');
    const js = await fetch(origin + app);
    t.equal(js.status, 200);
    t.match(js.headers.get('content-type'), /^text\/javascript/);
    t.match(js.headers.get('cache-control'), /immutable/);
    t.equal((await fetch(`${origin}/console/assets/0000000000000000/app.js`)).status, 404, 'another version is not served');
  });

  await t.test('the session API: sign-in, who am I, sign-out', async (t) => {
    const bad = await server.call('/console/session', { body: { token: CONSOLE_TOKEN, email: 'not-an-email' } });
    t.equal(bad.status, 422);
    t.same(bad.json.detail[0].loc, ['body', 'email']);
    t.equal((await server.call('/console/session', { body: { email: EMAIL } })).status, 422, 'no token');
    t.equal((await server.call('/console/session')).status, 401, 'not signed in');

    const signIn = await server.call('/console/session', { body: { token: CONSOLE_TOKEN, email: ' Ada@Example.EU ' } });
    t.equal(signIn.status, 200);
    t.equal(signIn.json.email, EMAIL, 'the email as the console API keys it');
    t.equal(signIn.headers.get('cache-control'), 'no-store');
    const setCookie = signIn.headers.get('set-cookie') ?? '';
    t.match(setCookie, /^arbitra_console=[\w-]+\.[\w-]+; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict$/);
    const cookie = setCookie.split(';')[0]!;
    const me = await server.call('/console/session', { headers: { cookie } });
    t.same([me.status, me.json.email, me.json.csrf], [200, EMAIL, signIn.json.csrf]);
    t.equal((await server.call('/console/session', { method: 'DELETE', headers: { cookie } })).status, 403, 'sign-out needs the CSRF header too');
    const out = await server.call('/console/session', { method: 'DELETE', headers: { cookie, 'x-arbitra-csrf': signIn.json.csrf } });
    t.equal(out.status, 200);
    t.match(out.headers.get('set-cookie'), /^arbitra_console=; Path=\/; Max-Age=0/);
  });

  await t.test('sign-in refuses a wrong token and an API key, and never shows the token in the URL', async (t) => {
    await page.goto(`${origin}/console`);
    await page.waitForSelector('form#sign-in', { visible: true });
    await screenshot(page, '01-sign-in');
    await page.type('#token', 'not-the-console-token-at-all');
    await page.type('#email', EMAIL);
    await page.keyboard.press('Enter');
    t.match(await waitText(page, '#sign-in-error', /Invalid console token/), /Invalid console token/);

    const key = await server.createKey(EMAIL, 'cli-made');
    await page.$eval('#token', (el) => ((el as HTMLInputElement).value = ''));
    await page.type('#token', key.secret);
    await page.click('form#sign-in [type=submit]');
    t.match(await waitText(page, '#sign-in-error', /API key/), /console token/, 'an API key is named as the wrong kind of secret');
    t.notMatch(page.url(), /token|arb_/, 'nothing typed reached the URL');

    const apiKeyOnConsole = await server.call('/v1/console/api-keys', { key: key.secret });
    t.equal(apiKeyOnConsole.status, 401, 'an API key does not open the console API either');
    const apiKeySignIn = await server.call('/console/session', { body: { token: key.secret, email: EMAIL } });
    t.equal(apiKeySignIn.status, 401);
    t.notOk(apiKeySignIn.headers.get('set-cookie'), 'and gets no session');
  });

  await t.test('signing in with the keyboard gives an HttpOnly, SameSite=Strict session the script cannot read', async (t) => {
    await page.$eval('#token', (el) => ((el as HTMLInputElement).value = ''));
    await page.focus('#token');
    await page.keyboard.type(CONSOLE_TOKEN);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    t.equal(await waitText(page, '#whoami', /@/), EMAIL);
    const cookies = await browser.cookies();
    const session = cookies.find((c) => c.name === 'arbitra_console');
    t.ok(session, 'a session cookie was set');
    t.equal(session?.httpOnly, true);
    t.equal(session?.sameSite, 'Strict');
    t.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read it');
    t.same(await page.evaluate(() => [localStorage.length, sessionStorage.length]), [0, 0], 'nothing kept in web storage');
    const stored = await page.evaluate(() => document.documentElement.outerHTML);
    t.notOk(stored.includes(CONSOLE_TOKEN), 'the token is gone from the page once exchanged');
  });

  let secret = '';
  await t.test('a key is created, its secret shown once, and its markup-like name stays text', async (t) => {
    await go(page, '#/keys', 'section#keys-page');
    await page.type('#key-name', XSS_NAME);
    await page.click('form#create-key [type=submit]');
    await page.waitForSelector('dialog#new-secret[open]', { visible: true });
    secret = await text(page, '#new-secret-value');
    t.match(secret, /^arb_[0-9A-Za-z]{43}$/, 'the full secret is shown');
    t.match(await text(page, 'dialog#new-secret'), /shown once/);
    await screenshot(page, '02-new-secret');
    await page.click('#close-secret');
    await page.waitForSelector('dialog#new-secret[open]', { hidden: true });
    t.notOk((await page.content()).includes(secret), 'once closed, the secret is nowhere in the page');
    await page.reload();
    await page.waitForSelector('section#keys-page', { visible: true });
    await page.waitForSelector('#keys-table tr[data-key-id]');
    t.notOk((await page.content()).includes(secret), 'nor after a reload');

    const names = await page.$$eval('#keys-table td.key-name', (cells) => cells.map((c) => c.textContent));
    t.ok(names.includes(XSS_NAME), 'the name is shown exactly as typed');
    t.equal(await page.$$eval('#keys-table img', (imgs) => imgs.length), 0, 'and made no element');
    t.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'and ran nothing');
    await screenshot(page, '03-keys');
  });

  await t.test('the per-user key cap is shown in the words of the API', async (t) => {
    await page.$eval('#key-name', (el) => ((el as HTMLInputElement).value = ''));
    await page.type('#key-name', 'one too many');
    await page.click('form#create-key [type=submit]');
    t.match(await waitText(page, '#keys-error', /at most/), /at most 2 active API keys/);
    t.equal(await page.$('dialog#new-secret[open]'), null, 'no secret dialog');
  });

  // The reload above dropped the in-memory secret, as it should; the playground takes a pasted key.
  let bars: { label: string; p: number; share: number; chosen: boolean }[] = [];
  await t.test('the playground decides with the key and draws a bar per option as wide as its probability', async (t) => {
    await go(page, '#/playground', 'section#playground-page');
    await page.select('#pg-key', 'paste');
    await page.type('#pg-key-secret', secret);
    await page.$eval('#pg-state', (el) => ((el as HTMLTextAreaElement).value = ''));
    await page.type('#pg-state', XSS_STATE);
    await page.click('#pg-send');
    await page.waitForSelector('#pg-result section.answer', { timeout: 120_000 });
    const kinds = await page.$$eval('#pg-result section.answer', (s) => s.map((a) => a.getAttribute('data-question')));
    t.equal(kinds.length, 3, 'an answer for each of the three example questions');

    const readBars = (question: string) =>
      page.$$eval(`#pg-result section.answer[data-question="${question}"] .bar-row`, (rows) =>
        rows.map((row) => {
          const bar = row.querySelector('.bar') as HTMLElement;
          const track = bar.parentElement as HTMLElement;
          return {
            label: row.getAttribute('data-label') ?? '',
            p: Number(bar.getAttribute('aria-valuenow')),
            share: bar.getBoundingClientRect().width / track.getBoundingClientRect().width,
            chosen: row.classList.contains('chosen'),
          };
        }),
      );
    for (const question of kinds) {
      bars = await readBars(question!);
      t.ok(bars.length >= 2, `${question}: a bar per option`);
      const sum = bars.reduce((s, b) => s + b.p, 0);
      t.ok(Math.abs(sum - 1) < 1e-3, `${question}: the probabilities sum to 1 (${sum})`);
      for (const b of bars) t.ok(Math.abs(b.share - b.p) < 0.01, `${question}/${b.label}: width ${b.share.toFixed(3)} follows p ${b.p.toFixed(3)}`);
      const top = bars.reduce((a, b) => (b.p > a.p ? b : a));
      t.same(
        bars.filter((b) => b.chosen).map((b) => b.label),
        [top.label],
        `${question}: the most probable option is the one marked`,
      );
      // The note appears exactly when the answer's own figures say the model is unsure.
      const section = `#pg-result section.answer[data-question="${question}"]`;
      const massText = await page.$eval(`${section} .label-mass`, (el) => el.textContent ?? '');
      const mass = Number(/([\d.]+)%/.exec(massText)![1]) / 100;
      const expected = bars.reduce((s, b, i) => s + b.p * i, 0);
      const spread = Math.sqrt(bars.reduce((s, b, i) => s + b.p * (i - expected) ** 2, 0));
      const unsure = mass < 0.5 || (question === 'urgency' ? spread >= 1 : top.p < 0.6);
      const notes = await page.$$eval(`${section} .unsure-note`, (els) => els.map((el) => el.textContent ?? ''));
      t.equal(notes.length, unsure ? 1 : 0, `${question}: label mass ${mass}, top ${top.p.toFixed(3)}, spread ${spread.toFixed(2)}: ${notes[0] ?? 'no note'}`);
      if (unsure) t.match(notes[0], /^Unsure: /);
    }
    t.match(await text(page, '#pg-tokens'), /\d/);
    t.match(await text(page, '#pg-latency'), /\d+\s*ms/);
    t.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'the state with a script tag ran nothing');
    t.equal(await page.$$eval('#playground-page script', (s) => s.length), 0);

    for (const id of ['#snippet-curl', '#snippet-python', '#snippet-js']) {
      const snippet = await text(page, id);
      t.notOk(snippet.includes(secret), `${id} never holds the secret`);
      t.ok(snippet.includes('The blender broke'), `${id} sends the same state`);
    }
    t.match(await text(page, '#snippet-curl'), /\/v1\/systemone/);
    await screenshot(page, '04-playground');
  });

  await t.test('usage shows the decisions made', async (t) => {
    await go(page, '#/usage', 'section#usage-page');
    await page.waitForSelector('#usage-table tbody tr td.requests');
    const rows = await page.$$eval('#usage-table tbody tr', (trs) =>
      trs.map((tr) => ({ key: tr.querySelector('td.key')?.textContent ?? '', requests: Number(tr.querySelector('td.requests')?.textContent) })),
    );
    const ours = rows.filter((r) => r.key.includes(XSS_NAME));
    t.ok(ours.length === 1 && ours[0]!.requests >= 1, `a row for the key with its decision (${JSON.stringify(rows)})`);
    const charted = Number(await page.$eval('#usage-chart', (el) => el.getAttribute('data-total-requests')));
    t.ok(charted >= 1, `the chart shows the requests (${charted})`);
    t.equal(await page.$$eval('#usage-chart canvas', (c) => c.length), 1, 'drawn by uPlot on a canvas');
    t.match(await text(page, '#account-cap'), /no cap/);
    t.ok(Number(await text(page, '#account-total')) >= 1);
    await screenshot(page, '05-usage');
  });

  await t.test('revoking the key, with confirmation, refuses its next decision', async (t) => {
    await go(page, '#/keys', 'section#keys-page');
    // The list is fetched when the page opens; both keys (the CLI's and the page's) appear.
    await page.waitForFunction(() => document.querySelectorAll('#keys-table tr[data-key-id]').length === 2);
    const id = await page.$$eval(
      '#keys-table tr[data-key-id]',
      (trs, name) => trs.find((tr) => tr.querySelector('td.key-name')?.textContent === name)?.getAttribute('data-key-id'),
      XSS_NAME,
    );
    t.ok(id);
    await page.click(`#keys-table tr[data-key-id="${id}"] button.revoke`);
    await page.waitForSelector('dialog#confirm-revoke[open]', { visible: true });
    t.ok((await text(page, 'dialog#confirm-revoke')).includes(XSS_NAME), 'the confirmation names the key, as text');
    await screenshot(page, '06-confirm-revoke');
    await page.click('#confirm-revoke-yes');
    t.equal(await waitText(page, `#keys-table tr[data-key-id="${id}"] td.key-status`, /revoked/), 'revoked');

    await go(page, '#/playground', 'section#playground-page');
    await page.select('#pg-key', 'paste');
    await page.$eval('#pg-key-secret', (el) => ((el as HTMLInputElement).value = ''));
    await page.type('#pg-key-secret', secret);
    await page.click('#pg-send');
    t.match(await waitText(page, '#pg-error', /revoked|Invalid API key/), /Invalid API key/);
  });

  await t.test('engines and model are shown', async (t) => {
    await go(page, '#/engines', 'section#engines-page');
    t.match(await waitText(page, '#engines-table', /ready/), /ready/);
    t.match(await text(page, '#engines-table .engine-deterministic'), /yes, checked at load/, "the engine's determinism check is shown");
    t.match(await text(page, '#engines-table .engine-kernels'), /^exact on CPU variant [a-z0-9_.-]+$/, 'the kernels, and the CPU variant they run on');
    t.match(await waitText(page, '#model-facts', /gemma/), /Q4_K_M|q4_k_m/i);
    // The test model has no labelled figures: the page says so and how to get them, and shows no figure.
    t.match(
      await waitText(page, '#model-facts [data-fact="quality"]', /labelled/),
      /^no labelled figures ship for this model file; fit one with `arbitra calibrate`$/,
      'why no overconfidence is shown',
    );
    await page.waitForFunction(() => /\d/.test((document.querySelector('#metric-queue-depth') as HTMLElement)?.innerText ?? ''));
    t.match(await text(page, '#metric-restarts'), /^\d+$/);
    await screenshot(page, '07-engines');
  });

  await t.test('the session cannot be borrowed: no CSRF header, or another origin, is refused', async (t) => {
    const status = await page.evaluate(async () => (await fetch('/v1/console/api-keys')).status);
    t.equal(status, 403, 'the cookie alone opens nothing');
    const cookie = (await browser.cookies()).find((c) => c.name === 'arbitra_console')!;
    const csrf = await page.evaluate(async () => (await (await fetch('/console/session')).json()).csrf as string);
    const headers = { cookie: `arbitra_console=${cookie.value}`, 'x-arbitra-csrf': csrf };
    t.equal((await server.call('/v1/console/api-keys', { headers })).status, 200, 'with its CSRF header it does');
    const forged = await server.call('/v1/console/api-keys', { body: { name: 'forged' }, headers: { ...headers, origin: 'http://evil.example' } });
    t.equal(forged.status, 403, 'a request from another site is refused even with both');
  });

  await t.test('every page is keyboard-labelled and readable on a phone', async (t) => {
    for (const [hash, section] of [
      ['#/keys', 'section#keys-page'],
      ['#/usage', 'section#usage-page'],
      ['#/playground', 'section#playground-page'],
      ['#/engines', 'section#engines-page'],
    ] as const) {
      await go(page, hash, section);
      const unlabelled = await page.$$eval('input, select, textarea, button', (els) =>
        els
          .filter((el) => (el as HTMLElement).offsetParent !== null)
          .filter((el) => {
            const labelled = (el as HTMLInputElement).labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
            return !labelled && !(el.tagName === 'BUTTON' && el.textContent?.trim());
          })
          .map((el) => el.outerHTML.slice(0, 80)),
      );
      t.same(unlabelled, [], `${hash}: every control has a label`);
      t.same(await page.evaluate(lowContrastText), [], `${hash}: all text has WCAG AA contrast against its background`);
    }
    const phone = await openPage(browser, { width: 390, height: 844 });
    t.teardown(() => phone.page.close());
    for (const [hash, section, name] of [
      ['#/keys', 'section#keys-page', '08-phone-keys'],
      ['#/playground', 'section#playground-page', '09-phone-playground'],
    ] as const) {
      await phone.page.goto(`${origin}/console${hash}`);
      await phone.page.waitForSelector(section, { visible: true });
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      t.ok(overflow <= 1, `${hash}: no sideways scrolling on a phone (${overflow} px)`);
      await screenshot(phone.page, name);
    }
    t.same(serious(phone), []);
  });

  await t.test('signing out ends the session', async (t) => {
    await page.click('#sign-out');
    await page.waitForSelector('form#sign-in', { visible: true });
    t.equal(await page.evaluate(async () => (await fetch('/console/session')).status), 401);
  });

  t.same(serious(watched), [], 'no script error or CSP refusal in the whole session');
  t.notOk(server.log().includes(CONSOLE_TOKEN), 'the console token was never logged');
  t.notOk(secret !== '' && server.log().includes(secret), 'nor the API key');
});

t.test('with no console token the page says how to set one', { skip: cannotRun }, async (t) => {
  const server = await startServer(t.testdir(), { workers: 0, consoleToken: null });
  t.teardown(() => server.stop());
  const browser = await launch();
  t.teardown(() => browser.close());
  const { page } = await openPage(browser);
  await page.goto(`${server.url}/console`);
  t.match(await waitText(page, '#console-closed', /ARBITRA_CONSOLE_TOKEN/), /ARBITRA_CONSOLE_TOKEN/);
  t.equal(await page.$('form#sign-in:not([hidden])').then((f) => f?.isVisible() ?? false), false, 'no sign-in form to fill in vain');
  await screenshot(page, '00-console-closed');
  const signIn = await server.call('/console/session', { body: { token: CONSOLE_TOKEN, email: EMAIL } });
  t.equal(signIn.status, 503);
});
