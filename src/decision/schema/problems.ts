// How the decision domain reports a request it cannot answer: pydantic's validation items, so
// the API can send them as a 422 unchanged, whichever layer found the problem. A 422 lists a
// bounded number of bounded items whatever was sent: a request never makes the server say more
// than a fixed amount about it.
import { cutText, previewValue } from './echo.js';

export interface ValidationErrorItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

export type Loc = (string | number)[];

/**
 * Items one 422 lists. Pydantic lists every problem; a person fixes a request from the first few
 * and a client shows them, while a hostile body can hold a million. 50 keeps every list a real
 * request makes (one or two problems per question, and at most 100 questions) readable whole
 * in all but the worst cases.
 */
export const MAX_LISTED_PROBLEMS = 50;
/** Characters of an item's msg, and of its ctx's text, kept: messages name labels and names the client chose. */
export const MAX_MESSAGE_CHARS = 1000;
/** Characters of text an echoed input keeps: enough to recognise the value, never the whole of a large one. */
export const INPUT_PREVIEW_CHARS = 1000;
/**
 * Bytes of JSON the listed items may take together: far below the 1 MiB that no answer may pass,
 * and far above what 50 ordinary items take (about 10 KiB).
 */
export const MAX_LISTED_BYTES = 256 * 1024;
/**
 * An item larger than this as JSON has the names in its loc cut to LOC_NAME_CHARS: only a member
 * name of many kilobytes makes one (a loc may be 64 names deep), and exact locs matter more than a
 * few kilobytes everywhere else.
 */
const MAX_ITEM_BYTES = 64 * 1024;
const LOC_NAME_CHARS = 128;

/** The type of the one item that stands for the problems a 422 does not list. */
export const TOO_MANY_ERRORS = 'too_many_errors';

/** Pydantic's value_error: a rule of ours, worded as the sentence it breaks. */
export function valueError(loc: Loc, message: string, input: unknown): ValidationErrorItem {
  return { type: 'value_error', loc, msg: `Value error, ${message}`, input, ctx: { error: message } };
}

/**
 * Stands for `count` problems found and not itemised; `stopped` when the check gave up there, so
 * that more may exist. A check that stops early ends its list with one of these.
 */
export function omittedProblems(count: number, stopped: boolean, loc: Loc = ['body']): ValidationErrorItem {
  const more = `${count} more problem${count === 1 ? ' was' : 's were'} found and not listed`;
  return {
    type: TOO_MANY_ERRORS,
    loc,
    msg: stopped
      ? `${more}; checking stopped there, so there may be others. Fix those listed and send the request again.`
      : `${more}. Fix those listed and send the request again.`,
    input: null,
    ctx: stopped ? { omitted: count, checking_stopped: true } : { omitted: count },
  };
}

/** An item whose texts are cut and whose input is a preview: its size no longer follows the request's. */
function boundedItem(item: ValidationErrorItem): ValidationErrorItem {
  const locChars = item.loc.reduce<number>((n, part) => n + String(part).length, 0);
  const loc = locChars > MAX_ITEM_BYTES ? shortLoc(item.loc) : item.loc;
  const out: ValidationErrorItem = { type: item.type, loc, msg: cutText(item.msg, MAX_MESSAGE_CHARS) };
  if ('input' in item) out.input = previewValue(item.input, INPUT_PREVIEW_CHARS);
  if (item.ctx) out.ctx = previewValue(item.ctx, MAX_MESSAGE_CHARS) as Record<string, unknown>;
  return out;
}

function shortLoc(loc: Loc): Loc {
  return loc.map((part) => (typeof part === 'string' ? cutText(part, LOC_NAME_CHARS) : part));
}

/**
 * The items a 422 sends for `items`: the first ones, each bounded, up to MAX_LISTED_PROBLEMS and
 * MAX_LISTED_BYTES, then one too_many_errors item counting the rest (the omitted items a check
 * already summarised included). Only the listed items are ever serialised, so the cost is bounded
 * too.
 */
export function listedProblems(items: readonly ValidationErrorItem[]): ValidationErrorItem[] {
  const listed: ValidationErrorItem[] = [];
  let bytes = 0;
  let omitted = 0;
  let stopped = false;
  let full = false;
  for (const item of items) {
    if (item.type === TOO_MANY_ERRORS) {
      omitted += Number(item.ctx?.omitted) || 0;
      stopped ||= item.ctx?.checking_stopped === true;
      continue;
    }
    if (!full && listed.length < MAX_LISTED_PROBLEMS) {
      let shown = boundedItem(item);
      let size = Buffer.byteLength(JSON.stringify(shown));
      if (size > MAX_ITEM_BYTES) {
        shown = { ...shown, loc: shortLoc(shown.loc) };
        size = Buffer.byteLength(JSON.stringify(shown));
      }
      if (bytes + size <= MAX_LISTED_BYTES) {
        listed.push(shown);
        bytes += size;
        continue;
      }
      // Listing stops at the first item that does not fit, so the list keeps the order found.
      full = true;
    }
    omitted++;
  }
  if (omitted > 0) listed.push(omittedProblems(omitted, stopped, [listed[0]?.loc[0] ?? 'body']));
  return listed;
}

/** Every problem found with a request at once, as far as a 422 lists them; the API answers it with 422. */
export class ValidationFailure extends Error {
  readonly status = 422;
  readonly detail: ValidationErrorItem[];
  constructor(detail: readonly ValidationErrorItem[]) {
    const listed = listedProblems(detail);
    super(listed.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'ValidationFailure';
    this.detail = listed;
  }
}
