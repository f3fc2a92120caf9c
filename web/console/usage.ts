// The usage page: the account's plan and month, then requests per key and UTC day as a chart and
// as the table that carries the same numbers for screen readers and for copying.
import { consoleApi, messageOf } from './api.js';
import { h, field, scrolling } from './dom.js';
import { listKeys } from './keys.js';
import type { Page } from './page.js';
import { drawUsageChart } from './usage-chart.js';
import type { Account, UsageRow } from './wire.js';

const WINDOW_DAYS = 30;
const DAY_MS = 86_400_000;

const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const keyLabel = (name: string, prefix: string): string => `${name} (${prefix})`;

/** The 30 UTC days the chart covers: up to today, or to the newest row's day if the browser's clock is behind. */
function chartDays(rows: UsageRow[]): string[] {
  let last = Date.parse(`${utcDay(Date.now())}T00:00:00Z`);
  for (const row of rows) {
    const at = Date.parse(`${row.day}T00:00:00Z`);
    if (!Number.isNaN(at)) last = Math.max(last, at);
  }
  return Array.from({ length: WINDOW_DAYS }, (_, i) => utcDay(last - (WINDOW_DAYS - 1 - i) * DAY_MS));
}

export function usagePage(): Page {
  const heading = h('h1', { id: 'usage-title', tabindex: -1 }, 'Usage');
  const error = h('p', { id: 'usage-error', class: 'error', role: 'alert' });
  const account = h('dl', { id: 'account', class: 'facts' });
  const keySelect = h('select', { id: 'usage-key', name: 'key' }, h('option', { value: '' }, 'All keys'));
  const chart = h('div', { id: 'usage-chart', class: 'chart', role: 'img', 'aria-label': 'Requests per UTC day' });
  const tbody = h('tbody');
  const empty = h('p', { class: 'empty muted', id: 'usage-empty', hidden: true }, 'No requests recorded yet. Calls made with your keys show up here.');
  const table = h(
    'table',
    { id: 'usage-table' },
    h('caption', null, 'Requests per UTC day and key, every recorded day'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Day (UTC)'),
        h('th', { scope: 'col' }, 'Key'),
        h('th', { scope: 'col' }, 'Requests'),
        h('th', { scope: 'col' }, 'Rate limited'),
      ),
    ),
    tbody,
  );
  let rows: UsageRow[] = [];
  let stopChart: (() => void) | null = null;

  function showAccount(a: Account): void {
    const item = (term: string, id: string, value: string): Node[] => [h('dt', null, term), h('dd', { id }, value)];
    account.replaceChildren(
      ...item('Plan', 'account-plan', a.plan),
      ...item('Month', 'account-month', a.month),
      ...item('Requests this month', 'account-total', String(a.total_requests)),
      ...item('Monthly cap', 'account-cap', a.monthly_cap === 0 ? 'no cap' : String(a.monthly_cap)),
      ...(a.balance_eur !== undefined ? item('Balance (EUR)', 'account-balance', a.balance_eur) : []),
    );
  }

  function showUsage(): void {
    const keyId = keySelect.value;
    const shown = rows.filter((row) => keyId === '' || row.key_id === keyId);
    const days = chartDays(rows);
    const index = new Map(days.map((day, i) => [day, i]));
    const requests = days.map(() => 0);
    const rateLimited = days.map(() => 0);
    let total = 0;
    let limitedTotal = 0;
    for (const row of shown) {
      // The schema allows a row without a day; it has no place on the chart, only in the table.
      const i = row.day === null ? undefined : index.get(row.day);
      if (i === undefined) continue;
      requests[i] = (requests[i] ?? 0) + row.requests;
      rateLimited[i] = (rateLimited[i] ?? 0) + row.rate_limited;
      total += row.requests;
      limitedTotal += row.rate_limited;
    }
    chart.dataset.totalRequests = String(total);
    chart.setAttribute(
      'aria-label',
      `Bar chart of requests per UTC day from ${days[0] ?? ''} to ${days[days.length - 1] ?? ''}: ${total} requests, ${limitedTotal} rate limited. The table below lists every recorded day.`,
    );
    stopChart?.();
    chart.replaceChildren();
    stopChart = drawUsageChart(chart, { days, requests, rateLimited });

    const sorted = [...shown].sort((a, b) => (b.day ?? '').localeCompare(a.day ?? '') || a.name.localeCompare(b.name));
    tbody.replaceChildren(
      ...sorted.map((row) =>
        h(
          'tr',
          { 'data-key-id': row.key_id },
          h('td', { class: 'day' }, row.day ?? '\u2014'),
          h('td', { class: 'key' }, keyLabel(row.name, row.prefix)),
          h('td', { class: 'requests num' }, String(row.requests)),
          h('td', { class: 'rate-limited num' }, String(row.rate_limited)),
        ),
      ),
    );
    empty.hidden = sorted.length > 0;
  }

  function fillKeyOptions(keys: { id: string; name: string; prefix: string }[]): void {
    const labels = new Map<string, string>();
    for (const key of keys) labels.set(key.id, keyLabel(key.name, key.prefix));
    for (const row of rows) if (!labels.has(row.key_id)) labels.set(row.key_id, keyLabel(row.name, row.prefix));
    keySelect.replaceChildren(h('option', { value: '' }, 'All keys'), ...[...labels].map(([id, label]) => h('option', { value: id }, label)));
  }

  keySelect.addEventListener('change', showUsage);

  void (async () => {
    try {
      const [accountBody, usageBody, keys] = await Promise.all([
        consoleApi<Account>('GET', '/v1/console/account'),
        consoleApi<{ rows: UsageRow[] }>('GET', '/v1/console/usage'),
        listKeys(),
      ]);
      showAccount(accountBody);
      rows = usageBody.rows;
      fillKeyOptions(keys);
      showUsage();
    } catch (failure) {
      error.textContent = messageOf(failure);
    }
  })();

  const element = h(
    'section',
    { id: 'usage-page', 'aria-labelledby': 'usage-title' },
    heading,
    error,
    h('h2', null, 'Account'),
    account,
    h('h2', null, 'Requests per day, last 30 UTC days'),
    h('div', { class: 'inline-form' }, field('Key', keySelect)),
    chart,
    h(
      'p',
      { class: 'legend muted' },
      h('span', { class: 'swatch swatch-requests' }),
      'Requests ',
      h('span', { class: 'swatch swatch-limited' }),
      'Rate limited (UTC days)',
    ),
    scrolling(table),
    empty,
  );
  return {
    element,
    heading,
    unmount: () => stopChart?.(),
  };
}
