// The playground: a decision request built in a form, sent with an API key exactly as a client
// would send it, its answers drawn as bars, and the same request shown as curl, Python and JS.
import { describeError, isRecord, messageOf, send } from './api.js';
import { renderAnswers } from './answers.js';
import { copyText, h, field, uid } from './dom.js';
import type { Page } from './page.js';
import { buildRequest, draftProblem, type DecisionOptions, type DecisionRequest, type QuestionDraft, type QuestionType } from './request.js';
import { knownSecrets, secretFor } from './secrets.js';
import { curlSnippet, jsSnippet, pythonSnippet } from './snippets.js';

const PASTE = 'paste';

const EXAMPLE_STATE = 'I was charged twice for my subscription this month. Please refund one of the payments as soon as possible.';
const EXAMPLES: QuestionDraft[] = [
  { name: 'billing', type: 'noul', instructions: 'Is this message about billing?', criteria: [] },
  { name: 'topic', type: 'choice', instructions: 'What is this ticket about?', criteria: ['billing', 'technical', 'account', 'other'] },
  {
    name: 'urgency',
    type: 'score',
    instructions: 'How urgent is this ticket?',
    criteria: ['not urgent', 'can wait a few days', 'should be handled today', 'needs attention within the hour', 'an emergency'],
  },
];

const CRITERIA_LABELS: Record<QuestionType, string> = {
  noul: 'Criteria',
  choice: 'Labels, one per line',
  score: 'Levels, lowest first, one per line (2 to 10)',
};

/** One question's fieldset, and how to read it back. */
function questionFieldset(draft: QuestionDraft, onRemove: (fieldset: HTMLFieldSetElement) => void): HTMLFieldSetElement {
  const name = h('input', { id: uid('q-name'), class: 'q-name', type: 'text', autocomplete: 'off', spellcheck: 'false', value: draft.name });
  const type = h(
    'select',
    { id: uid('q-type'), class: 'q-type' },
    ...(['noul', 'choice', 'score'] as const).map((t) => h('option', { value: t, selected: t === draft.type }, t)),
  );
  const instructions = h('textarea', { id: uid('q-instructions'), class: 'q-instructions', rows: 2 }, draft.instructions);
  const criteria = h('textarea', { id: uid('q-criteria'), class: 'q-criteria', rows: 4 }, draft.criteria.join('\n'));
  const criteriaField = field(CRITERIA_LABELS[draft.type], criteria);
  const remove = h('button', { type: 'button', class: 'q-remove danger-quiet' }, 'Remove question');
  const legend = h('legend', null, draft.name || 'New question');
  const fieldset = h(
    'fieldset',
    { class: 'pg-question' },
    legend,
    h('div', { class: 'q-grid' }, field('Name', name), field('Type', type)),
    field('Instructions', instructions),
    criteriaField,
    h('div', { class: 'actions' }, remove),
  );
  const syncType = (): void => {
    const t = type.value as QuestionType;
    const label = criteriaField.querySelector('label');
    if (label) label.textContent = CRITERIA_LABELS[t];
    // A yes/no question has no labels to list: its answer is always yes or no.
    criteriaField.hidden = t === 'noul';
    criteria.disabled = t === 'noul';
  };
  syncType();
  type.addEventListener('change', syncType);
  name.addEventListener('input', () => {
    legend.textContent = name.value.trim() || 'New question';
  });
  remove.setAttribute('aria-label', `Remove question ${draft.name || ''}`.trim());
  name.addEventListener('change', () => remove.setAttribute('aria-label', `Remove question ${name.value.trim()}`.trim()));
  remove.addEventListener('click', () => onRemove(fieldset));
  return fieldset;
}

function readQuestion(fieldset: HTMLFieldSetElement): QuestionDraft {
  const value = (selector: string): string => fieldset.querySelector<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>(selector)?.value ?? '';
  return {
    name: value('.q-name').trim(),
    type: value('.q-type') as QuestionType,
    instructions: value('.q-instructions').trim(),
    criteria: value('.q-criteria')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== ''),
  };
}

/** A token count as the reply gives it, or a dash where it gives none. */
function tokens(count: unknown): string {
  return typeof count === 'number' ? String(count) : '\u2014';
}

function snippetBlock(id: string, title: string): { block: HTMLElement; pre: HTMLPreElement } {
  const pre = h('pre', { id, class: 'snippet', tabindex: 0 });
  const status = h('span', { class: 'copy-status', role: 'status' });
  const copy = h('button', { type: 'button', class: 'copy-snippet', 'aria-label': `Copy the ${title} snippet` }, 'Copy');
  copy.addEventListener('click', () => void copyText(pre.textContent ?? '', pre, status));
  return { block: h('div', { class: 'snippet-block' }, h('div', { class: 'snippet-head' }, h('h3', null, title), copy, status), pre), pre };
}

interface Playground {
  page: Page;
  /** Offers the keys created since the page was built. */
  refreshKeys(): void;
}

function buildPlayground(): Playground {
  const heading = h('h1', { id: 'playground-title', tabindex: -1 }, 'Playground');
  const keySelect = h('select', { id: 'pg-key', name: 'key' });
  const secretInput = h('input', { id: 'pg-key-secret', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  const secretField = field('API key secret', secretInput, 'Only sent to this server, in the Authorization header; not stored.');
  const state = h('textarea', { id: 'pg-state', rows: 4 }, EXAMPLE_STATE);
  const questions = h('div', { id: 'pg-questions' });
  const addQuestion = h('button', { type: 'button', id: 'pg-add-question' }, 'Add question');
  const debias = h('select', { id: 'pg-debias' }, h('option', { value: 'off' }, 'off'), h('option', { value: 'permute' }, 'permute'));
  const passes = h('input', { id: 'pg-passes', type: 'number', min: 2, max: 8, step: 1, value: 4 });
  const raw = h('input', { id: 'pg-raw', type: 'checkbox' });
  const sendButton = h('button', { type: 'submit', id: 'pg-send', class: 'primary' }, 'Send request');
  const error = h('p', { id: 'pg-error', class: 'error', role: 'alert' });
  const result = h('div', { id: 'pg-result', 'aria-live': 'polite' });
  const curl = snippetBlock('snippet-curl', 'curl');
  const python = snippetBlock('snippet-python', 'Python');
  const js = snippetBlock('snippet-js', 'JavaScript');

  const removeQuestion = (fieldset: HTMLFieldSetElement): void => {
    const next = fieldset.nextElementSibling ?? fieldset.previousElementSibling;
    fieldset.remove();
    ((next?.querySelector('.q-name') as HTMLElement | null) ?? addQuestion).focus();
    updateSnippets();
  };
  for (const example of EXAMPLES) questions.append(questionFieldset(example, removeQuestion));

  addQuestion.addEventListener('click', () => {
    const fieldset = questionFieldset({ name: `question_${questions.children.length + 1}`, type: 'noul', instructions: '', criteria: [] }, removeQuestion);
    questions.append(fieldset);
    fieldset.querySelector<HTMLElement>('.q-name')?.focus();
    updateSnippets();
  });

  function currentOptions(): DecisionOptions {
    const n = Math.round(Number(passes.value));
    return {
      debias: debias.value === 'permute' ? 'permute' : 'off',
      debias_passes: Number.isFinite(n) ? n : 4,
      return_raw_probabilities: raw.checked,
    };
  }

  function currentDrafts(): QuestionDraft[] {
    return [...questions.querySelectorAll<HTMLFieldSetElement>('fieldset.pg-question')].map(readQuestion);
  }

  function currentRequest(): DecisionRequest {
    return buildRequest(state.value, currentDrafts(), currentOptions());
  }

  function updateSnippets(): void {
    const request = currentRequest();
    curl.pre.textContent = curlSnippet(location.origin, request);
    python.pre.textContent = pythonSnippet(location.origin, request);
    js.pre.textContent = jsSnippet(location.origin, request);
  }

  function syncKeyChoice(): void {
    const pasting = keySelect.value === PASTE;
    secretField.hidden = !pasting;
    secretInput.disabled = !pasting;
  }

  /** The keys created in this tab, newest selected unless the user had picked another. */
  function refreshKeys(): void {
    const before = keySelect.value;
    const known = knownSecrets();
    keySelect.replaceChildren(...known.map((k) => h('option', { value: k.id }, `${k.name} (${k.prefix})`)), h('option', { value: PASTE }, 'Paste a key\u2026'));
    const keep = [...keySelect.options].some((o) => o.value === before);
    keySelect.value = keep ? before : (known[known.length - 1]?.id ?? PASTE);
    syncKeyChoice();
  }
  keySelect.addEventListener('change', syncKeyChoice);

  function chosenSecret(): string | null {
    const secret = keySelect.value === PASTE ? secretInput.value.trim() : (secretFor(keySelect.value) ?? '');
    return secret === '' ? null : secret;
  }

  async function sendRequest(): Promise<void> {
    error.textContent = '';
    const drafts = currentDrafts();
    const problem = draftProblem(drafts);
    if (problem) {
      error.textContent = problem;
      return;
    }
    const secret = chosenSecret();
    if (secret === null) {
      error.textContent = 'Choose a key created in this tab, or paste an API key secret.';
      return;
    }
    // fetch refuses header values outside Latin-1 with an opaque error; say what is wrong instead.
    if (!/^[\x21-\x7e]+$/.test(secret)) {
      error.textContent = 'That API key secret holds spaces or characters an API key never has.';
      return;
    }
    const request = buildRequest(state.value, drafts, currentOptions());
    sendButton.disabled = true;
    result.setAttribute('aria-busy', 'true');
    const started = performance.now();
    try {
      // credentials: 'omit' — the call is authorised by the API key alone, as any client's would be.
      const reply = await send('/v1/systemone', {
        method: 'POST',
        credentials: 'omit',
        headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(request),
      });
      const roundTrip = performance.now() - started;
      if (!reply.ok || !isRecord(reply.body) || !isRecord(reply.body.answers)) {
        result.replaceChildren();
        error.textContent = reply.ok ? 'The server\u2019s answer could not be read.' : describeError(reply);
        return;
      }
      const usage = isRecord(reply.body.usage) ? reply.body.usage : {};
      const meta = isRecord(reply.body.meta) ? reply.body.meta : {};
      const latency = typeof meta.latency_ms === 'number' ? `${meta.latency_ms} ms` : '\u2014';
      result.replaceChildren(
        h('h2', null, 'Answers'),
        ...renderAnswers(reply.body.answers),
        h(
          'dl',
          { class: 'facts pg-meta' },
          h('dt', null, 'Tokens'),
          h('dd', { id: 'pg-tokens' }, `${tokens(usage.input_tokens)} input, ${tokens(usage.output_tokens)} output`),
          h('dt', null, 'Latency'),
          h('dd', { id: 'pg-latency' }, `server ${latency}, round trip ${Math.round(roundTrip)} ms`),
          h('dt', null, 'Request id'),
          h('dd', { class: 'pg-request-id' }, typeof reply.body.id === 'string' ? reply.body.id : '\u2014'),
        ),
      );
    } catch (failure) {
      result.replaceChildren();
      error.textContent = messageOf(failure);
    } finally {
      sendButton.disabled = false;
      result.removeAttribute('aria-busy');
    }
  }

  const form = h(
    'form',
    { id: 'pg-form', novalidate: true },
    h('fieldset', { class: 'pg-key' }, h('legend', null, 'Key'), field('API key', keySelect), secretField),
    field('State', state, 'The text the questions are about.'),
    h('h2', null, 'Questions'),
    questions,
    h('div', { class: 'actions' }, addQuestion),
    h(
      'fieldset',
      { class: 'pg-options' },
      h('legend', null, 'Options'),
      h(
        'div',
        { class: 'q-grid' },
        field('Debias', debias, 'permute averages reorderings of the options to cancel position bias.'),
        field('Debias passes', passes, '2 to 8; used when debias is permute.'),
      ),
      h('div', { class: 'checkbox' }, raw, h('label', { for: raw.id }, 'Raw probabilities')),
    ),
    error,
    h('div', { class: 'actions' }, sendButton),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void sendRequest();
  });
  // Any edit, including a question added or removed, shows in the snippets at once.
  form.addEventListener('input', updateSnippets);
  form.addEventListener('change', updateSnippets);

  refreshKeys();
  updateSnippets();
  const element = h(
    'section',
    { id: 'playground-page', 'aria-labelledby': 'playground-title' },
    heading,
    h('p', { class: 'lede' }, 'Ask questions about a state with one of your API keys, exactly as a client would.'),
    h('div', { class: 'pg-layout' }, h('div', { class: 'pg-form-column' }, form), h('div', { class: 'pg-result-column' }, result)),
    h(
      'section',
      { class: 'snippets', 'aria-labelledby': 'snippets-title' },
      h('h2', { id: 'snippets-title' }, 'The same request in code'),
      curl.block,
      python.block,
      js.block,
    ),
  );
  return { page: { element, heading }, refreshKeys };
}

// The playground keeps what was typed while the user visits other pages; it is rebuilt after a
// sign-out so nothing of one session's work is shown to the next.
let kept: Playground | null = null;

export function playgroundPage(): Page {
  if (kept) kept.refreshKeys();
  else kept = buildPlayground();
  return kept.page;
}

export function resetPlayground(): void {
  kept = null;
}
