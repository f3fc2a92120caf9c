// Validation of POST /v1/systemone bodies. The envelope is checked first; each question is then
// checked against the one variant its `type` names, so a bad choice question is reported in the
// choice variant's terms (and a question without `type` in the noul variant's) rather than as the
// closest of three union branches. Counting rules come last, from the normaliser.
import { ValidationFailure, type ValidationErrorItem } from '../errors.js';
import { tooManyQuestions } from '../../decision/decide.js';
import { MAX_LISTED_PROBLEMS, omittedProblems } from '../../decision/schema/problems.js';
import { compileValidator } from '../validation.js';
import type { QuestionSpec } from '../../decision/kinds/index.js';
import { normaliseQuestion, normaliseRequest, type NormalisedRequest } from '../../decision/normalise.js';
import { QUESTION_VARIANTS, SystemOneEnvelope, type QuestionTypeName, type SystemOneRequest } from './systemone.js';

const checkEnvelope = compileValidator(SystemOneEnvelope);
const checkVariant = Object.fromEntries(Object.entries(QUESTION_VARIANTS).map(([name, schema]) => [name, compileValidator(schema, [])])) as Record<
  QuestionTypeName,
  ReturnType<typeof compileValidator>
>;
const TYPE_NAMES = Object.keys(QUESTION_VARIANTS) as QuestionTypeName[];
const EXPECTED_TYPES = `${TYPE_NAMES.slice(0, -1)
  .map((n) => `'${n}'`)
  .join(', ')} or '${TYPE_NAMES.at(-1)}'`;

function questionErrors(name: string, question: Record<string, unknown>): ValidationErrorItem[] {
  const loc = ['body', 'questions', name];
  const type = question.type ?? 'noul';
  if (typeof type !== 'string' || !Object.hasOwn(QUESTION_VARIANTS, type)) {
    return [
      { type: 'literal_error', loc: [...loc, 'type'], msg: `Input should be ${EXPECTED_TYPES}`, input: question.type, ctx: { expected: EXPECTED_TYPES } },
    ];
  }
  return checkVariant[type as QuestionTypeName](question).map((e) => ({ ...e, loc: [...loc, ...e.loc] }));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The problems of the body at once, as a 422; otherwise the normalised request. More questions
 * than `maxQuestions` (0 = any number) is reported alone: the count stops the walks it guards,
 * so 80,000 questions cost one count, not a schema check and a normalisation each.
 */
export function validateSystemOneRequest(body: unknown, maxQuestions = 0): NormalisedRequest {
  const questions = isPlainObject(body) && isPlainObject(body.questions) ? body.questions : {};
  const tooMany = tooManyQuestions(Object.keys(questions).length, maxQuestions);
  if (tooMany) throw new ValidationFailure([tooMany]);
  const errors = checkEnvelope(body);
  const specs: QuestionSpec[] = [];
  // Questions are checked even when other members failed, so one 422 lists everything it can;
  // a question that is not an object was already reported by the envelope. Once more problems
  // are known than a 422 lists, checking the rest would only be work.
  for (const [name, question] of Object.entries(questions)) {
    if (errors.length > MAX_LISTED_PROBLEMS) {
      errors.push(omittedProblems(0, true));
      break;
    }
    if (!isPlainObject(question)) continue;
    const structural = questionErrors(name, question);
    if (structural.length > 0) {
      errors.push(...structural);
      continue;
    }
    const { spec, errors: semantic } = normaliseQuestion(name, question);
    errors.push(...semantic);
    if (spec) specs.push(spec);
  }
  if (errors.length > 0) throw new ValidationFailure(errors);
  return normaliseRequest(body as SystemOneRequest, specs);
}
