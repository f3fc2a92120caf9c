// Building blocks shared by the request and response schemas; those of the decision domain are
// its own, re-exported here for the API's other schemas.
import { Type } from '@sinclair/typebox';

export { ConfidenceBand } from '../../decision/schema/answers.js';
export { Entry, JsonObject, MemberName } from '../../decision/schema/entry.js';

/**
 * Statuses besides 200 that answer with a route's own response body, named on the response schema
 * (e.g. /health is 503 with its usual body while the model loads); every other error status
 * carries ErrorResponse.
 */
export const ALSO_STATUSES = 'x-also-statuses';

/**
 * Ids in a path are at most this long. The ids the service issues are under 40 characters; 200
 * leaves room for other shapes (a trace's request_id may be as long) while a store key built from
 * one stays far below LMDB's key size limit of 1,978 bytes, whatever characters it holds.
 */
export const MAX_PATH_ID_LENGTH = 200;

/** A resource id taken from the path; a longer one is a 422 string_too_long at ["path", name]. */
export const PathId = Type.String({ maxLength: MAX_PATH_ID_LENGTH });
