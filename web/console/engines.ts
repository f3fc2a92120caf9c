// The engines page: the model and how overconfident its served probabilities are per question type,
// the server's health, its engines, and three live numbers from /metrics, refreshed every 5 s while
// the page is shown.
import { consoleApi, describeError, isRecord, messageOf, send } from './api.js';
import { h, scrolling } from './dom.js';
import { date, duration, signed } from './format.js';
import { parseMetrics, sumOf } from './metrics-text.js';
import type { Page } from './page.js';
import type { Health, ModelFacts } from './wire.js';

const POLL_MS = 5000;
const DECISION_ROUTE = '/v1/systemone';

const DASH = '\u2014';

/** What an engine's load-time check found, in words: the promise held, the path it does not cover, or by how much it moved. */
function determinism(engine: Health['engines'][number]): string {
  if (engine.path && !engine.path.covered && engine.kernels === 'exact') return `no: a path the promise does not cover (${engine.path.uncovered.join('; ')})`;
  if (engine.deterministic === null) return 'not checked';
  if (engine.deterministic) return 'yes, checked at load';
  return `no: moved by up to ${(engine.max_difference ?? 0).toFixed(3)} nats`;
}

const TYPES = ['noul', 'choice', 'score'] as const;

/**
 * /health's model.quality: per type, how far the served probabilities' confidence is from their hit
 * rate on held-out labelled data (> 0 claims too much), as read or through the calibration, and the
 * data it was read from; where no figures describe the served model, only why.
 */
function quality(q: Health['model']['quality'] | undefined): Node[] {
  if (!q) return [document.createTextNode(DASH)];
  if ('unavailable' in q) return [h('span', { class: 'quality-unavailable' }, q.unavailable)];
  const lines = TYPES.flatMap((kind) => {
    const f = q.types[kind];
    if (!f) return [];
    const how = f.calibrated ? 'calibrated' : 'as read';
    return [h('span', { class: 'quality-line', 'data-type': kind }, `${kind}: ${signed(f.overconfidence)} (${how}; ECE ${f.ece.toFixed(3)}, n ${f.n})`)];
  });
  return [
    ...lines,
    h('span', { class: 'quality-source muted' }, `mean top probability minus the share right (> 0 claims too much), held out on ${q.source} (${q.version})`),
  ];
}

export function enginesPage(): Page {
  const heading = h('h1', { id: 'engines-title', tabindex: -1 }, 'Engines');
  const error = h('div', { id: 'engines-error', class: 'error', role: 'alert' });
  const decisions = h('dd', { id: 'metric-decisions-per-s' }, DASH);
  const queue = h('dd', { id: 'metric-queue-depth' }, DASH);
  const restarts = h('dd', { id: 'metric-restarts' }, DASH);
  const facts = h('dl', { id: 'model-facts', class: 'facts' });
  const tbody = h('tbody');
  const table = h(
    'table',
    { id: 'engines-table' },
    h('caption', { class: 'visually-hidden' }, 'Engines'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Engine'),
        h('th', { scope: 'col' }, 'Device'),
        h('th', { scope: 'col' }, 'Status'),
        h('th', { scope: 'col' }, 'Kernels'),
        h('th', { scope: 'col' }, 'Same answer whatever the load'),
      ),
    ),
    tbody,
  );
  const updated = h('p', { class: 'muted', role: 'status' });

  let model: ModelFacts | null = null;
  let modelProblem = '';
  let health: Health | null = null;
  let healthProblem = '';
  let previous: { count: number; at: number } | null = null;

  function showFacts(): void {
    const item = (term: string, key: string, value: string): Node[] => [h('dt', null, term), h('dd', { 'data-fact': key }, value)];
    const m = model;
    facts.replaceChildren(
      ...item('Model', 'id', m?.id ?? DASH),
      h('dt', null, 'Overconfidence'),
      h('dd', { 'data-fact': 'quality', class: 'quality' }, ...quality(health?.model.quality)),
      ...item('Aliases', 'aliases', m ? (m.aliases.length > 0 ? m.aliases.join(', ') : 'none') : DASH),
      ...item('Description', 'description', m?.description || DASH),
      ...item('Architecture', 'architecture', m?.architecture || DASH),
      ...item('Quantisation', 'quantisation', m?.quant_method || DASH),
      ...item('Context tokens', 'context-tokens', m ? String(m.context_tokens) : DASH),
      ...item('Backend', 'backend', m?.backend || DASH),
      ...item('Model file date', 'file-date', m?.file_modified ? date(m.file_modified) : DASH),
      ...item('Health', 'health-status', health?.status ?? DASH),
      ...item('API version', 'api-version', health?.api_version ?? DASH),
      ...item('Uptime', 'uptime', health?.uptime_s !== undefined ? duration(health.uptime_s) : DASH),
      ...item('HTTP transport', 'http', health?.http ?? DASH),
      ...item('HTTP workers', 'workers', health?.workers !== undefined ? String(health.workers) : DASH),
    );
    tbody.replaceChildren(
      ...(health?.engines ?? []).map((engine) =>
        h(
          'tr',
          { 'data-engine': engine.engine },
          h('td', { class: 'engine-number' }, String(engine.engine)),
          h('td', { class: 'engine-device' }, engine.device ?? 'cpu'),
          h('td', { class: `engine-status status-${engine.status.replace(/[^a-z-]/gi, '')}` }, engine.status),
          h(
            'td',
            { class: 'engine-kernels', title: engine.kernels_note ?? '' },
            engine.kernels ?? DASH,
            engine.path ? h('span', { class: 'engine-cpu-variant muted' }, ` on CPU variant ${engine.path.cpu_variant}`) : null,
          ),
          h('td', { class: engine.deterministic === false ? 'engine-deterministic moved' : 'engine-deterministic' }, determinism(engine)),
        ),
      ),
    );
    error.replaceChildren(...[modelProblem, healthProblem].filter((m) => m !== '').map((m) => h('p', null, m)));
  }

  async function loadModel(): Promise<void> {
    try {
      model = await consoleApi<ModelFacts>('GET', '/console/api/model');
      modelProblem = '';
    } catch (failure) {
      modelProblem = `Model: ${messageOf(failure)}`;
    }
  }

  async function loadHealth(): Promise<void> {
    try {
      // A degraded server answers 503 with the same body: still worth showing.
      const reply = await send('/health', { headers: { Accept: 'application/json' } });
      if (isRecord(reply.body) && typeof reply.body.status === 'string') {
        health = reply.body as Health;
        healthProblem = reply.ok ? '' : `The server reports its health as \u201c${reply.body.status}\u201d.`;
      } else {
        healthProblem = `Health: ${describeError(reply)}`;
      }
    } catch (failure) {
      healthProblem = `Health: ${messageOf(failure)}`;
    }
  }

  async function loadMetrics(): Promise<void> {
    try {
      const reply = await send('/metrics', { headers: { Accept: 'text/plain' } });
      if (!reply.ok || typeof reply.body !== 'string') return;
      const samples = parseMetrics(reply.body);
      const count = sumOf(samples, 'arbitra_http_requests_total', { route: DECISION_ROUTE });
      const at = performance.now();
      // A rate needs two polls; a counter that went down means a restart, so start over from it.
      if (previous && count >= previous.count && at > previous.at) {
        decisions.textContent = ((count - previous.count) / ((at - previous.at) / 1000)).toFixed(2);
      } else {
        decisions.textContent = DASH;
      }
      previous = { count, at };
      queue.textContent = String(sumOf(samples, 'arbitra_engine_queue_depth'));
      restarts.textContent = String(sumOf(samples, 'arbitra_engine_restarts_total'));
    } catch {
      // The headline numbers keep their last values; the health and model rows say what is wrong.
    }
  }

  let busy = false;
  let stopped = false;
  async function refresh(): Promise<void> {
    if (busy) return;
    busy = true;
    try {
      await Promise.all([model ? Promise.resolve() : loadModel(), loadHealth(), loadMetrics()]);
      if (stopped) return;
      showFacts();
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshes every 5 s.`;
    } finally {
      busy = false;
    }
  }

  void refresh();
  const timer = window.setInterval(() => void refresh(), POLL_MS);
  showFacts();

  // A <div> per term and value is valid in a <dl> and lets each number be its own card.
  const metric = (term: string, dd: HTMLElement): HTMLElement => h('div', { class: 'metric' }, h('dt', null, term), dd);
  const element = h(
    'section',
    { id: 'engines-page', 'aria-labelledby': 'engines-title' },
    heading,
    error,
    h('dl', { class: 'headline' }, metric('Decisions per second', decisions), metric('Queue depth', queue), metric('Engine restarts', restarts)),
    h('h2', null, 'Engines'),
    scrolling(table),
    h('h2', null, 'Model and server'),
    facts,
    updated,
  );
  return {
    element,
    heading,
    unmount: () => {
      stopped = true;
      window.clearInterval(timer);
    },
  };
}
