// Signing in and out of the console, and the sign-in screen. The session itself is an HttpOnly
// cookie this page never sees; what it keeps is the CSRF token, in memory (see api.ts).
import { ApiError, describeError, isRecord, messageOf, send, setCsrf } from './api.js';
import { h, field } from './dom.js';
import type { Session } from './wire.js';

export type { Session };

export type SessionState = { kind: 'signed-in'; session: Session } | { kind: 'signed-out'; message?: string } | { kind: 'closed'; message: string };

function asSession(body: unknown): Session | null {
  if (!isRecord(body) || typeof body.email !== 'string' || typeof body.csrf !== 'string') return null;
  return { email: body.email, csrf: body.csrf, expires_at: typeof body.expires_at === 'string' ? body.expires_at : '' };
}

/** The session the cookie still holds, if any: how a reload keeps the user signed in. */
export async function currentSession(): Promise<SessionState> {
  try {
    const reply = await send('/console/session', { headers: { Accept: 'application/json' } });
    const session = reply.ok ? asSession(reply.body) : null;
    if (session) {
      setCsrf(session.csrf);
      return { kind: 'signed-in', session };
    }
    if (reply.status === 503) return { kind: 'closed', message: describeError(reply) };
    if (reply.status === 401) return { kind: 'signed-out' };
    return { kind: 'signed-out', message: describeError(reply) };
  } catch (error) {
    return { kind: 'signed-out', message: messageOf(error) };
  }
}

async function signIn(token: string, email: string): Promise<SessionState> {
  const reply = await send('/console/session', {
    method: 'POST',
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify({ token, email }),
  });
  const session = reply.ok ? asSession(reply.body) : null;
  if (session) {
    setCsrf(session.csrf);
    return { kind: 'signed-in', session };
  }
  if (reply.status === 503) return { kind: 'closed', message: describeError(reply) };
  return { kind: 'signed-out', message: describeError(reply) };
}

/** Ends the session on the server; whatever it answers, this tab forgets the CSRF token. */
export async function signOut(csrf: string): Promise<void> {
  try {
    await send('/console/session', { method: 'DELETE', headers: { 'X-Arbitra-CSRF': csrf } });
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
  } finally {
    setCsrf(null);
  }
}

/** The screen shown when the operator has not configured a console token. */
export function closedView(message: string): HTMLElement {
  return h(
    'main',
    { class: 'sign-in-page' },
    h('h1', null, 'Arbitra console'),
    h(
      'section',
      { id: 'console-closed', class: 'notice', 'aria-labelledby': 'console-closed-title' },
      h('h2', { id: 'console-closed-title' }, 'The console is not open'),
      h('p', null, message),
      h(
        'p',
        null,
        'To open it, set ',
        h('code', null, 'ARBITRA_CONSOLE_TOKEN'),
        ' (at least 16 characters) in the server\u2019s environment and restart ',
        h('code', null, 'arbitra serve'),
        '.',
      ),
    ),
  );
}

export function signInView(onSignedIn: (session: Session) => void, onClosed: (message: string) => void, message?: string): HTMLElement {
  const token = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  const email = h('input', { id: 'email', name: 'email', type: 'email', autocomplete: 'email' });
  const error = h('p', { id: 'sign-in-error', class: 'error', role: 'alert' }, message ?? '');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  // The server judges the token and the email, so its own messages are what the user reads.
  const form = h(
    'form',
    { id: 'sign-in', novalidate: true },
    field('Console token', token, 'The token the operator set as ARBITRA_CONSOLE_TOKEN.'),
    field('Email', email, 'Your API keys and usage are kept under this address.'),
    error,
    h('div', { class: 'actions' }, submit),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    error.textContent = '';
    submit.disabled = true;
    signIn(token.value, email.value.trim())
      .then((state) => {
        if (state.kind === 'signed-in') onSignedIn(state.session);
        else if (state.kind === 'closed') onClosed(state.message);
        else {
          // The server's refusal says it all, an API key typed in place of the token included.
          error.textContent = state.message ?? 'Signing in failed.';
          token.focus();
        }
      })
      .catch((failure: unknown) => {
        error.textContent = messageOf(failure);
      })
      .finally(() => {
        submit.disabled = false;
      });
  });
  return h(
    'main',
    { class: 'sign-in-page' },
    h('h1', null, 'Arbitra console'),
    h('p', { class: 'lede' }, 'Sign in to manage API keys, see usage and try questions against the model.'),
    form,
  );
}
