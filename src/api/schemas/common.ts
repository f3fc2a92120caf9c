// Building blocks shared by the request and response schemas.
import { Type, type Static } from '@sinclair/typebox';

/**
 * The key of a record: any member name. TypeBox keys a Type.String() record by the pattern ^(.*)$,
 * whose dot stops at a line break, so a member whose name held one was never checked at all.
 */
export const MemberName = Type.String({ pattern: '^[\\s\\S]*$' });

/**
 * Ids in a path are at most this long. The ids the service issues are under 40 characters; 200
 * leaves room for other shapes (a trace's request_id may be as long) while a store key built from
 * one stays far below LMDB's key size limit of 1,978 bytes, whatever characters it holds.
 */
export const MAX_PATH_ID_LENGTH = 200;

/** A resource id taken from the path; a longer one is a 422 string_too_long at ["path", name]. */
export const PathId = Type.String({ maxLength: MAX_PATH_ID_LENGTH });

/** Any JSON object; arrays are not objects here (TypeBox's default policy rejects them). */
export const JsonObject = Type.Record(MemberName, Type.Unknown());

/**
 * Free-form content as the third party's clients send it for state, instructions and criteria
 * descriptions: text, a JSON object, a JSON array, or null.
 */
export const Entry = Type.Union([Type.String(), JsonObject, Type.Array(Type.Unknown()), Type.Null()], {
  description: 'Text, a JSON object or a JSON array (shown to the model as compact JSON), or null.',
});
export type Entry = Static<typeof Entry>;

export const ConfidenceBand = Type.Union(
  [Type.Literal('high'), Type.Literal('leaning'), Type.Literal('low'), Type.Null()],
  { description: 'Calibration band of the answer; null unless the server applies a fitted calibration (ARBITRA_CALIBRATION=on).' },
);
export type ConfidenceBand = Static<typeof ConfidenceBand>;
