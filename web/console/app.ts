// The console's entry: restores the session, then shows either the sign-in screen or the signed-in
// shell, whose pages follow the URL's hash (#/keys, #/usage, #/playground, #/engines).
import { SESSION_ENDED, onSessionEnded } from './api.js';
import { h } from './dom.js';
import { enginesPage } from './engines.js';
import { keysPage } from './keys.js';
import type { Page } from './page.js';
import { playgroundPage, resetPlayground } from './playground.js';
import { forgetSecrets } from './secrets.js';
import { closedView, currentSession, signInView, signOut, type Session } from './session.js';
import { usagePage } from './usage.js';

const ROUTES = {
  keys: { title: 'API keys', page: keysPage },
  usage: { title: 'Usage', page: usagePage },
  playground: { title: 'Playground', page: playgroundPage },
  engines: { title: 'Engines', page: enginesPage },
} as const;
type RouteName = keyof typeof ROUTES;
const DEFAULT_ROUTE: RouteName = 'keys';

const root = document.getElementById('app') ?? document.body;

let session: Session | null = null;
let current: Page | null = null;
let main: HTMLElement | null = null;
let nav: HTMLElement | null = null;

function routeFromHash(): RouteName | null {
  const name = location.hash.replace(/^#\/?/, '');
  return Object.hasOwn(ROUTES, name) ? (name as RouteName) : null;
}

function leavePage(): void {
  current?.unmount?.();
  current = null;
}

function showSignIn(message?: string): void {
  leavePage();
  session = null;
  forgetSecrets();
  resetPlayground();
  document.title = 'Sign in \u00b7 Arbitra console';
  root.replaceChildren(signInView(showShell, showClosed, message));
  document.getElementById(message ? 'sign-in-error' : 'token')?.focus();
}

function showClosed(message: string): void {
  leavePage();
  session = null;
  document.title = 'Arbitra console';
  root.replaceChildren(closedView(message));
}

function showShell(signedIn: Session): void {
  session = signedIn;
  const signOutButton = h('button', { type: 'button', id: 'sign-out' }, 'Sign out');
  signOutButton.addEventListener('click', () => {
    const csrf = signedIn.csrf;
    signOutButton.disabled = true;
    void signOut(csrf).finally(() => showSignIn());
  });
  nav = h(
    'nav',
    { 'aria-label': 'Console' },
    h('ul', null, ...Object.entries(ROUTES).map(([name, route]) => h('li', null, h('a', { href: `#/${name}` }, route.title)))),
  );
  main = h('main', { id: 'main' });
  root.replaceChildren(
    h(
      'header',
      { class: 'site-header' },
      h('p', { class: 'brand' }, 'Arbitra console'),
      nav,
      h('div', { class: 'account' }, h('span', { class: 'muted' }, 'Signed in as '), h('span', { id: 'whoami' }, signedIn.email), signOutButton),
    ),
    main,
  );
  showRoute(false);
}

function showRoute(moveFocus: boolean): void {
  if (!session || !main || !nav) return;
  let name = routeFromHash();
  if (!name) {
    name = DEFAULT_ROUTE;
    history.replaceState(null, '', `#/${name}`);
  }
  leavePage();
  const route = ROUTES[name];
  const page = route.page();
  current = page;
  main.replaceChildren(page.element);
  document.title = `${route.title} \u00b7 Arbitra console`;
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // A screen reader or keyboard user lands on the new page's heading, not at the top of the shell.
  if (moveFocus) page.heading.focus();
}

window.addEventListener('hashchange', () => showRoute(true));

onSessionEnded(() => {
  if (session) showSignIn(SESSION_ENDED);
});

void currentSession().then((state) => {
  if (state.kind === 'signed-in') showShell(state.session);
  else if (state.kind === 'closed') showClosed(state.message);
  else showSignIn(state.message);
});
