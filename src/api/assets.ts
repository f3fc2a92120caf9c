// Images in a decision request: the `assets` member (base64 in the JSON, or parts of a multipart
// form), the placeholders that reference them, and images written straight into the state. Every
// asset is checked as a vision model would need it, then refused by name, so no answer is ever
// given that silently ignored an image.
import { ValidationFailure, type ValidationErrorItem } from './errors.js';
import { MAX_LISTED_PROBLEMS, omittedProblems, valueError } from '../decision/schema/problems.js';
import { parseJson } from './json-body.js';
import type { Asset } from './schemas/systemone.js';
import { isMultipart, MultipartError, parseMultipart, type FormPart } from './multipart.js';
import type { HttpRequest } from './route.js';

type Loc = (string | number)[];

/** The largest image an asset may hold, decoded. */
export const MAX_ASSET_BYTES = 10 * 1024 * 1024;
export const MAX_ASSETS = 16;
/** The form part that carries the JSON request in a multipart body, as the third party's clients name it. */
export const REQUEST_PART = 'request';

export interface ImageAsset {
  name: string;
  format: 'png' | 'jpeg';
  bytes: number;
}

export interface SystemOneBody {
  body: unknown;
  /** The image parts of a multipart form by name; empty for a JSON body. */
  parts: Map<string, FormPart>;
}

/** The JSON request and, for a multipart form, its other parts. */
export function readSystemOneBody(req: HttpRequest): SystemOneBody {
  if (!isMultipart(req.headers['content-type'])) return { body: parseJson(req.body), parts: new Map() };
  let form: FormPart[];
  try {
    form = parseMultipart(req.body, req.headers['content-type']!);
  } catch (err) {
    if (!(err instanceof MultipartError)) throw err;
    throw new ValidationFailure([{ type: 'multipart_invalid', loc: ['body'], msg: `Invalid multipart/form-data body: ${err.message}`, input: null }]);
  }
  const request = form.find((p) => p.name === REQUEST_PART);
  if (!request) {
    throw new ValidationFailure([
      {
        type: 'missing',
        loc: ['body', REQUEST_PART],
        msg: `Field required: a multipart request carries its JSON in a part named "${REQUEST_PART}"`,
        input: null,
      },
    ]);
  }
  return { body: parseJson(request.data), parts: new Map(form.filter((p) => p !== request).map((p) => [p.name, p])) };
}

const SIGNATURES: { format: ImageAsset['format']; magic: Buffer }[] = [
  { format: 'png', magic: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { format: 'jpeg', magic: Buffer.from([0xff, 0xd8, 0xff]) },
];
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DATA_URL_PREFIX = /^data:image\/[\w.+-]+;base64,/i;
/** A placeholder of the third party's clients, e.g. <image:4f0c…>. */
const PLACEHOLDER = /<image:[^<>\s]*>/g;

/** The format the bytes really are (the declared one is only a hint), or null. */
export function detectImageFormat(data: Buffer): ImageAsset['format'] | null {
  return SIGNATURES.find((s) => data.subarray(0, s.magic.length).equals(s.magic))?.format ?? null;
}

/** Strict base64 (whitespace and a data: URL prefix allowed) → bytes, or null. */
export function decodeBase64(text: string): Buffer | null {
  const compact = text.replace(DATA_URL_PREFIX, '').replace(/\s+/g, '');
  return BASE64.test(compact) ? Buffer.from(compact, 'base64') : null;
}

/**
 * Every problem with the request's assets at once: each asset's source (a part of this form, or
 * base64 with its format), its bytes (a PNG or JPEG within the size limit), every placeholder in
 * the state, instructions and criteria resolved, every asset and every form part used. Too many
 * assets is the one problem reported alone: the count stops the walk it guards, so 30,000 assets
 * cost one count, not 30,000 checks.
 */
export function validateAssets(body: Record<string, unknown>, parts: Map<string, FormPart>): ImageAsset[] {
  const assets = (body.assets ?? {}) as Record<string, Asset>;
  const names = Object.keys(assets);
  if (names.length > MAX_ASSETS) {
    throw new ValidationFailure([
      {
        type: 'too_long',
        loc: ['body', 'assets'],
        msg: `A request may carry at most ${MAX_ASSETS} assets; got ${names.length}`,
        ctx: { max_length: MAX_ASSETS },
      },
    ]);
  }
  const errors: ValidationErrorItem[] = [];
  const images: ImageAsset[] = [];
  const claimed = new Map<string, string>();
  for (const [name, asset] of Object.entries(assets)) {
    const loc = ['body', 'assets', name];
    const data = assetBytes(name, asset, parts, claimed, loc, errors);
    if (!data) continue;
    const format = detectImageFormat(data);
    if (data.length === 0) errors.push(valueError(loc, `asset "${name}" is empty`, null));
    else if (data.length > MAX_ASSET_BYTES)
      errors.push(valueError(loc, `asset "${name}" is ${data.length} bytes; an image may have at most ${MAX_ASSET_BYTES}`, null));
    else if (!format) errors.push(valueError(loc, `asset "${name}" is not a PNG or JPEG image (its bytes carry neither signature)`, null));
    else images.push({ name, format, bytes: data.length });
  }
  for (const part of parts.keys()) {
    if (!claimed.has(part)) errors.push(valueError(['body', part], `form part "${part}" is not used by any asset; name it in an asset's "part"`, null));
  }

  const texts = requestTexts(body);
  // One problem per placeholder, however often it is written: a text of 100,000 copies is one.
  // Past what a 422 lists, the rest are only counted.
  const known = new Set(names);
  const unresolved = new Set<string>();
  let unlisted = 0;
  for (const { text, loc } of texts) {
    PLACEHOLDER.lastIndex = 0;
    for (let found = PLACEHOLDER.exec(text); found; found = PLACEHOLDER.exec(text)) {
      const placeholder = found[0];
      if (known.has(placeholder) || unresolved.has(placeholder)) continue;
      unresolved.add(placeholder);
      if (errors.length > MAX_LISTED_PROBLEMS) unlisted++;
      else errors.push(valueError(loc, `placeholder ${placeholder} has no asset: add it to "assets"`, text));
    }
  }
  if (unlisted > 0) errors.push(omittedProblems(unlisted, false));
  // At most MAX_ASSETS names, each looked for once in every text: linear in the request.
  for (const name of names) {
    if (!texts.some(({ text }) => text.includes(name))) {
      errors.push(
        valueError(['body', 'assets', name], `asset "${name}" is not referenced: its key must appear in the state, an instruction or a criterion`, null),
      );
    }
  }
  if (errors.length > 0) throw new ValidationFailure(errors);
  return images;
}

function assetBytes(
  name: string,
  asset: Asset,
  parts: Map<string, FormPart>,
  claimed: Map<string, string>,
  loc: Loc,
  errors: ValidationErrorItem[],
): Buffer | null {
  if (asset.part !== undefined) {
    const part = parts.get(asset.part);
    if (!part) {
      const why = parts.size === 0 ? 'this request is not a multipart/form-data form' : `the form has no part named "${asset.part}"`;
      errors.push(valueError([...loc, 'part'], `asset "${name}" names part "${asset.part}", but ${why}`, asset.part));
      return null;
    }
    const owner = claimed.get(asset.part);
    if (owner !== undefined) {
      errors.push(valueError([...loc, 'part'], `part "${asset.part}" is already used by asset "${owner}"; each part belongs to one asset`, asset.part));
      return null;
    }
    claimed.set(asset.part, name);
    return part.data;
  }
  if (asset.data_base64 === undefined) {
    errors.push(valueError(loc, `asset "${name}" needs data_base64 (with format) or, in a multipart form, part`, null));
    return null;
  }
  if (asset.format === undefined)
    errors.push({ type: 'missing', loc: [...loc, 'format'], msg: 'Field required: format is required with data_base64', input: null });
  const data = decodeBase64(asset.data_base64);
  if (!data) errors.push(valueError([...loc, 'data_base64'], `asset "${name}" is not valid base64`, null));
  return asset.format === undefined ? null : data;
}

interface Located {
  node: unknown;
  loc: Loc;
}

/**
 * Every value under the roots, each with its loc, parents before children (lazily: a caller that
 * stops early walks no further). A loop, not recursion: a deeply nested state must not exhaust
 * the call stack.
 */
function* walk(roots: Located[]): Generator<Located> {
  const stack = [...roots];
  while (stack.length > 0) {
    const at = stack.pop()!;
    yield at;
    const { node, loc } = at;
    if (Array.isArray(node)) node.forEach((child, i) => stack.push({ node: child, loc: [...loc, i] }));
    else if (node !== null && typeof node === 'object') for (const [k, child] of Object.entries(node)) stack.push({ node: child, loc: [...loc, k] });
  }
}

/** Every string a placeholder may sit in (object keys too), with where it is: the state, and each question's instructions and criteria. */
function requestTexts(body: Record<string, unknown>): { text: string; loc: Loc }[] {
  const roots: Located[] = [{ node: body.state, loc: ['body', 'state'] }];
  const questions = (body.questions ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, q] of Object.entries(questions)) {
    for (const member of ['instructions', 'criteria']) roots.push({ node: q[member], loc: ['body', 'questions', name, member] });
  }
  const out: { text: string; loc: Loc }[] = [];
  for (const { node, loc } of walk(roots)) {
    if (typeof node === 'string') out.push({ text: node, loc });
    else if (node !== null && typeof node === 'object' && !Array.isArray(node)) for (const k of Object.keys(node)) out.push({ text: k, loc });
  }
  return out;
}

const IMAGE_PART_TYPES = new Set(['image', 'image_url', 'input_image']);
// A data URL that is the whole string, or an inline base64 image anywhere in text.
const DATA_IMAGE = /^\s*data:image\/[\w.+-]+[;,]|data:image\/[\w.+-]+;base64,/i;

/**
 * Where the state carries an image of its own, as a loc under ["body", "state"]; null when it
 * carries none. An image is a string holding a data:image/... URL, or an object whose `type` is
 * "image", "image_url" or "input_image" (the content-part shapes of the common chat APIs).
 */
export function findInlineImage(state: unknown): Loc | null {
  for (const { node, loc } of walk([{ node: state, loc: ['body', 'state'] }])) {
    if (typeof node === 'string' && DATA_IMAGE.test(node)) return loc;
    const type = node !== null && typeof node === 'object' && !Array.isArray(node) ? (node as Record<string, unknown>).type : undefined;
    if (typeof type === 'string' && IMAGE_PART_TYPES.has(type)) return loc;
  }
  return null;
}

/**
 * The 422 items for a request that carries images: each asset (and an image inline in the state) by
 * name. Without the opt-in header it says how to opt in; with it, that the served model, being
 * text-only, cannot read them.
 */
export function refuseImages(assets: ImageAsset[], inline: Loc | null, optedIn: boolean, header: string): ValidationErrorItem[] {
  if (assets.length === 0 && !inline) return [];
  const why = optedIn ? 'the served model is text-only and cannot read images' : `images are a preview feature: send the header ${header}: true to opt in`;
  const errors = assets.map((a) => valueError(['body', 'assets', a.name], `asset "${a.name}" is an image (${a.format}, ${a.bytes} bytes); ${why}`, null));
  if (inline) errors.push(valueError(inline, `the state contains an image; ${why}`, undefined));
  return errors;
}
