// The playground's request as code: raw curl, and the official TypeSafe clients (typesafe-sdk on
// PyPI, @typesafe-ai/sdk on npm), which work against Arbitra given its base URL. The key is always
// read from the environment, never written into the text.
import type { DecisionRequest, QuestionBody } from './request.js';

const json = (value: unknown): string => JSON.stringify(value);

export function curlSnippet(origin: string, request: DecisionRequest): string {
  // A quoted heredoc passes the JSON to curl untouched by the shell, whatever quotes it holds.
  return [
    `curl -sS ${origin}/v1/systemone \\`,
    '  -H "Authorization: Bearer $ARBITRA_API_KEY" \\',
    '  -H "Content-Type: application/json" \\',
    "  --data-binary @- <<'JSON'",
    JSON.stringify(request, null, 2),
    'JSON',
  ].join('\n');
}

/** A JSON string literal is a valid Python string literal too (same escapes, \\uXXXX included). */
function python(value: unknown): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (Array.isArray(value)) return `[${value.map(python).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${json(k)}: ${python(v)}`)
      .join(', ')}}`;
  return json(value);
}

// Both clients model choice criteria as label → description; null means "the label alone", which is
// what the playground's list of labels says.
const labels = (criteria: string[]): Record<string, null> => Object.fromEntries(criteria.map((label) => [label, null]));

function pythonQuestion(q: QuestionBody): string {
  if (q.type === 'noul') return `Noul(instructions=${json(q.instructions)})`;
  if (q.type === 'choice') return `Choice(instructions=${json(q.instructions)}, criteria=${python(labels(q.criteria))})`;
  return `Score(instructions=${json(q.instructions)}, criteria=${python(q.criteria)})`;
}

export function pythonSnippet(origin: string, request: DecisionRequest): string {
  const questions = Object.entries(request.questions);
  const classes = [...new Set(questions.map(([, q]) => ({ noul: 'Noul', choice: 'Choice', score: 'Score' })[q.type]))].sort();
  return [
    'import os',
    '',
    `from typesafe_sdk import ${[...classes, 'TypeSafeClient'].join(', ')}`,
    '',
    `client = TypeSafeClient(base_url=${json(origin)}, api_key=os.environ["ARBITRA_API_KEY"])`,
    'result = client.system_one(',
    `    state=${json(request.state)},`,
    '    questions={',
    ...questions.map(([name, q]) => `        ${json(name)}: ${pythonQuestion(q)},`),
    '    },',
    `    extra_body={"options": ${python(request.options)}},`,
    ')',
    'for name, answer in result.answers.items():',
    '    print(name, answer)',
  ].join('\n');
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
// A "__proto__" key, quoted or not, would set the literal's prototype; a computed key does not.
const jsKey = (key: string): string => (key === '__proto__' ? `[${json(key)}]` : IDENTIFIER.test(key) ? key : json(key));

/** A JavaScript literal as a person would write it: keys unquoted where they can be. */
function js(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(js).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    return entries.length === 0 ? '{}' : `{ ${entries.map(([k, v]) => `${jsKey(k)}: ${js(v)}`).join(', ')} }`;
  }
  return json(value);
}

function jsQuestion(q: QuestionBody): string {
  if (q.type === 'noul') return `noul(${json(q.instructions)})`;
  if (q.type === 'choice') return `choice(${json(q.instructions)}, ${js(labels(q.criteria))})`;
  return `score(${json(q.instructions)}, ${js(q.criteria)})`;
}

export function jsSnippet(origin: string, request: DecisionRequest): string {
  const questions = Object.entries(request.questions);
  const helpers = [...new Set(questions.map(([, q]) => q.type))].sort();
  return [
    `import { TypeSafeClient${helpers.map((name) => `, ${name}`).join('')} } from '@typesafe-ai/sdk';`,
    '',
    `const client = new TypeSafeClient({ baseURL: ${json(origin)}, apiKey: process.env.ARBITRA_API_KEY });`,
    'const result = await client.systemOne({',
    `  state: ${json(request.state)},`,
    '  questions: {',
    ...questions.map(([name, q]) => `    ${jsKey(name)}: ${jsQuestion(q)},`),
    '  },',
    `  options: ${js(request.options)},`,
    '});',
    'console.log(result.answers);',
  ].join('\n');
}
