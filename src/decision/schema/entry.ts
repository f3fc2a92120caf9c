// The free-form content a decision is asked about: the state, instructions and criteria
// descriptions, as the third party's clients send them.
import { Type, type Static } from '@sinclair/typebox';

/**
 * The key of a record: any member name. TypeBox keys a Type.String() record by the pattern ^(.*)$,
 * whose dot stops at a line break, so a member whose name held one was never checked at all.
 */
export const MemberName = Type.String({ pattern: '^[\\s\\S]*$' });

/** Any JSON object; arrays are not objects here (TypeBox's default policy rejects them). */
export const JsonObject = Type.Record(MemberName, Type.Unknown());

/** Text, a JSON object, a JSON array, or null. */
export const Entry = Type.Union([Type.String(), JsonObject, Type.Array(Type.Unknown()), Type.Null()], {
  description: 'Text, a JSON object or a JSON array (shown to the model as compact JSON), or null.',
});
export type Entry = Static<typeof Entry>;

/** The context every question of a request is asked about. */
export const State = Type.Union([Type.String(), JsonObject, Type.Array(Type.Unknown())], {
  description: 'Context for the questions; objects and arrays are shown to the model as compact JSON.',
});
export type State = Static<typeof State>;
