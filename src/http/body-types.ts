// Which request bodies a route takes, read from Content-Type: JSON everywhere, multipart/form-data
// only on routes that declare it, and only with the boundary that separates its parts.
import { isMultipartForm } from '../api/multipart.js';
import type { Route } from '../api/route.js';

export type BodyType = NonNullable<Route['bodyTypes']>[number];

const MEDIA_TYPES: Readonly<Record<BodyType, string>> = {
  json: 'application/json',
  multipart: 'multipart/form-data',
};

/** The kind of body a Content-Type announces, or null for one no route takes. */
export function bodyTypeOf(contentType: string | undefined): BodyType | null {
  if (!contentType) return null;
  if (contentType.split(';')[0]!.trim().toLowerCase() === MEDIA_TYPES.json) return 'json';
  return isMultipartForm(contentType) ? 'multipart' : null;
}

/** `types` for a message: "application/json or multipart/form-data with a boundary parameter". */
export function describeBodyTypes(types: readonly BodyType[]): string {
  return types.map((t) => (t === 'multipart' ? `${MEDIA_TYPES[t]} with a boundary parameter` : MEDIA_TYPES[t])).join(' or ');
}
