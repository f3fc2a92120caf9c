// The API keys page: list, create (the secret shown once), revoke (after a confirmation).
import { consoleApi, messageOf } from './api.js';
import { copyText, h, field, scrolling } from './dom.js';
import { dateTime, timeElement } from './format.js';
import type { Page } from './page.js';
import { rememberSecret } from './secrets.js';
import type { ApiKey, CreatedKey } from './wire.js';

export const SECRET_WARNING = 'This secret is shown once. Copy it now; it cannot be shown again.';

export async function listKeys(): Promise<ApiKey[]> {
  const body = await consoleApi<{ keys: ApiKey[] }>('GET', '/v1/console/api-keys');
  return body.keys;
}

function when(iso: string | null, otherwise: string): Node {
  return iso === null ? document.createTextNode(otherwise) : timeElement(iso, dateTime(iso));
}

export function keysPage(): Page {
  const heading = h('h1', { tabindex: -1 }, 'API keys');
  const error = h('p', { id: 'keys-error', class: 'error', role: 'alert' });
  const nameInput = h('input', { id: 'key-name', name: 'name', type: 'text', autocomplete: 'off' });
  const createButton = h('button', { type: 'submit', class: 'primary' }, 'Create key');
  const createForm = h(
    'form',
    { id: 'create-key', class: 'inline-form', novalidate: true },
    field('Key name', nameInput, 'A name that says where the key is used, e.g. \u201cbilling-bot production\u201d.'),
    createButton,
  );
  const tbody = h('tbody');
  const status = h('p', { class: 'muted', role: 'status' }, 'Loading keys\u2026');
  const table = h(
    'table',
    { id: 'keys-table' },
    h('caption', { class: 'visually-hidden' }, 'Your API keys'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ...['Name', 'Prefix', 'Key', 'Created', 'Last used', 'Requests this month', 'Status'].map((label) => h('th', { scope: 'col' }, label)),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
      ),
    ),
    tbody,
  );

  // Confirmation before a revoke: the name is shown as text, and "No" takes the first focus.
  const confirmName = h('strong');
  const confirmNo = h('button', { type: 'button', id: 'confirm-revoke-no' }, 'No, keep it');
  const confirmYes = h('button', { type: 'button', id: 'confirm-revoke-yes', class: 'danger' }, 'Yes, revoke');
  const confirm = h(
    'dialog',
    { id: 'confirm-revoke', 'aria-labelledby': 'confirm-revoke-title' },
    h('h2', { id: 'confirm-revoke-title' }, 'Revoke this key?'),
    h('p', null, 'Revoke the key ', confirmName, '? Requests that use it are refused from now on. This cannot be undone.'),
    h('div', { class: 'dialog-actions' }, confirmNo, confirmYes),
  );
  let pending: ApiKey | null = null;

  // The one-time display of a new secret. Its content is built when it opens and dropped when it
  // closes (button, Escape or otherwise), so the secret leaves the page with it.
  const secretDialog = h('dialog', { id: 'new-secret', 'aria-labelledby': 'new-secret-title' });
  const dropSecret = (): void => {
    secretDialog.replaceChildren();
    nameInput.focus();
  };
  secretDialog.addEventListener('close', dropSecret);

  function render(keys: ApiKey[]): void {
    status.textContent = keys.length === 0 ? 'No keys yet. Create one above to call the API.' : '';
    tbody.replaceChildren(
      ...keys.map((key) => {
        const active = key.revoked_at === null;
        return h(
          'tr',
          { 'data-key-id': key.id, class: active ? null : 'revoked' },
          h('td', { class: 'key-name' }, key.name),
          h('td', { class: 'key-prefix' }, h('code', null, key.prefix)),
          h('td', { class: 'key-masked' }, h('code', null, key.masked)),
          h('td', { class: 'key-created' }, when(key.created_at, '')),
          h('td', { class: 'key-last-used' }, when(key.last_used_at, 'never')),
          h('td', { class: 'key-month num' }, String(key.month_requests)),
          h('td', { class: 'key-status' }, active ? 'active' : 'revoked'),
          h(
            'td',
            { class: 'key-actions' },
            active
              ? h('button', { type: 'button', class: 'revoke danger-quiet', 'aria-label': `Revoke key ${key.name}`, onclick: () => askRevoke(key) }, 'Revoke')
              : key.revoked_at
                ? h('span', { class: 'muted' }, 'Revoked ', when(key.revoked_at, ''))
                : null,
          ),
        );
      }),
    );
  }

  async function reload(): Promise<void> {
    try {
      render(await listKeys());
    } catch (failure) {
      status.textContent = '';
      error.textContent = messageOf(failure);
    }
  }

  function askRevoke(key: ApiKey): void {
    pending = key;
    confirmName.textContent = key.name;
    confirmYes.disabled = false;
    confirm.showModal();
  }

  confirmNo.addEventListener('click', () => confirm.close());
  confirm.addEventListener('close', () => {
    pending = null;
    heading.focus();
  });
  confirmYes.addEventListener('click', () => {
    const key = pending;
    if (!key) return;
    confirmYes.disabled = true;
    error.textContent = '';
    consoleApi('DELETE', `/v1/console/api-keys/${encodeURIComponent(key.id)}`)
      .then(() => reload())
      .catch((failure: unknown) => {
        error.textContent = messageOf(failure);
      })
      .finally(() => confirm.close());
  });

  function showSecret(created: CreatedKey): void {
    const value = h('code', { id: 'new-secret-value' }, created.key);
    const copyStatus = h('p', { class: 'copy-status', role: 'status' });
    const copy = h('button', { type: 'button', id: 'copy-secret', class: 'primary' }, 'Copy secret');
    copy.addEventListener('click', () => void copyText(created.key, value, copyStatus));
    const close = h('button', { type: 'button', id: 'close-secret' }, 'I have copied it, close');
    // The close event comes a task later; drop the secret now so it is gone the moment the button is used.
    close.addEventListener('click', () => {
      secretDialog.close();
      dropSecret();
    });
    secretDialog.replaceChildren(
      h('h2', { id: 'new-secret-title' }, 'New key \u201c', created.name, '\u201d'),
      h('p', { class: 'warning' }, SECRET_WARNING),
      h('div', { class: 'secret-box' }, value),
      copyStatus,
      h('p', { class: 'muted' }, 'Until you reload or sign out, the Playground can use this key from this tab.'),
      h('div', { class: 'dialog-actions' }, close, copy),
    );
    secretDialog.showModal();
    copy.focus();
  }

  createForm.addEventListener('submit', (event) => {
    event.preventDefault();
    error.textContent = '';
    createButton.disabled = true;
    consoleApi<CreatedKey>('POST', '/v1/console/api-keys', { name: nameInput.value.trim() })
      .then((created) => {
        rememberSecret({ id: created.id, name: created.name, prefix: created.prefix, secret: created.key });
        nameInput.value = '';
        showSecret(created);
        return reload();
      })
      .catch((failure: unknown) => {
        error.textContent = messageOf(failure);
        nameInput.focus();
      })
      .finally(() => {
        createButton.disabled = false;
      });
  });

  void reload();
  const element = h(
    'section',
    { id: 'keys-page', 'aria-labelledby': 'keys-title' },
    heading,
    h('p', { class: 'lede' }, 'Keys authenticate calls to the API. A key\u2019s secret is shown once, when it is created.'),
    createForm,
    error,
    h('h2', null, 'Your keys'),
    scrolling(table),
    status,
    confirm,
    secretDialog,
  );
  heading.id = 'keys-title';
  return { element, heading };
}
