// multipart/form-data (RFC 7578) over a body that is already buffered and bounded by the body
// limit: the parts are views into it, never copies. Only what form uploads use is accepted
// (Content-Disposition: form-data with a name, an optional Content-Type); anything else is a
// MultipartError whose message says what is wrong, for a 422.

export interface FormPart {
  name: string;
  filename: string | null;
  /** Lower-cased media type without parameters; text/plain when the part has none (RFC 7578 §4.4). */
  contentType: string;
  data: Buffer;
}

export class MultipartError extends Error {
  override readonly name = 'MultipartError';
}

/** Parts past this many are refused: a form of thousands of tiny parts is not an upload. */
export const MAX_PARTS = 64;
const MAX_HEADER_BYTES = 8 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

export function isMultipart(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'multipart/form-data';
}

const BOUNDARY = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;"]{1,70}))\s*(?:;|$)/i;

/** Whether a content type is multipart/form-data with a usable boundary parameter. */
export function isMultipartForm(contentType: string | undefined): boolean {
  return isMultipart(contentType) && BOUNDARY.test(contentType!);
}

/** The boundary parameter of a multipart/form-data content type. */
export function boundaryOf(contentType: string): string {
  const m = BOUNDARY.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw new MultipartError('the multipart/form-data Content-Type needs a boundary parameter of 1 to 70 characters');
  return boundary;
}

export function parseMultipart(body: Buffer, contentType: string): FormPart[] {
  const boundary = boundaryOf(contentType);
  const opening = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // The preamble before the first boundary is ignored, as RFC 2046 says.
  let at = body.subarray(0, opening.length).equals(opening) ? 0 : body.indexOf(delimiter);
  if (at < 0) throw new MultipartError(`the body never contains the boundary "${boundary}" from the Content-Type`);
  at += at === 0 ? opening.length : delimiter.length;

  const parts: FormPart[] = [];
  const names = new Set<string>();
  for (;;) {
    if (body[at] === 0x2d && body[at + 1] === 0x2d) break; // "--": the closing delimiter
    at = skipTransportPadding(body, at);
    if (!body.subarray(at, at + 2).equals(CRLF)) throw new MultipartError('a boundary line must end with CRLF');
    at += 2;
    const headerEnd = body.indexOf(HEADER_END, at);
    if (headerEnd < 0 || headerEnd - at > MAX_HEADER_BYTES)
      throw new MultipartError(`part ${parts.length + 1} has no end of headers within ${MAX_HEADER_BYTES} bytes`);
    const headers = parseHeaders(body.subarray(at, headerEnd).toString('latin1'));
    const dataStart = headerEnd + HEADER_END.length;
    const next = body.indexOf(delimiter, dataStart);
    if (next < 0) throw new MultipartError(`part ${parts.length + 1} is not closed by the boundary: the body is truncated`);
    const part = formPart(headers, body.subarray(dataStart, next), parts.length + 1);
    if (names.has(part.name)) throw new MultipartError(`more than one part is named "${part.name}"`);
    names.add(part.name);
    parts.push(part);
    if (parts.length > MAX_PARTS) throw new MultipartError(`a form may have at most ${MAX_PARTS} parts`);
    at = next + delimiter.length;
  }
  if (parts.length === 0) throw new MultipartError('the form has no parts');
  return parts;
}

function skipTransportPadding(body: Buffer, at: number): number {
  while (body[at] === 0x20 || body[at] === 0x09) at++;
  return at;
}

function parseHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new MultipartError(`a part header line is malformed: ${JSON.stringify(line.slice(0, 80))}`);
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

function formPart(headers: Map<string, string>, data: Buffer, ordinal: number): FormPart {
  const disposition = headers.get('content-disposition');
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition)) {
    throw new MultipartError(`part ${ordinal} needs a Content-Disposition: form-data header`);
  }
  const name = dispositionParam(disposition, 'name');
  if (!name) throw new MultipartError(`part ${ordinal} has no name in its Content-Disposition`);
  const contentType = (headers.get('content-type') ?? 'text/plain').split(';')[0]!.trim().toLowerCase();
  return { name, filename: dispositionParam(disposition, 'filename'), contentType, data };
}

function dispositionParam(disposition: string, key: string): string | null {
  const m = new RegExp(`;\\s*${key}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s;]+))`, 'i').exec(disposition);
  if (!m) return null;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!;
}
