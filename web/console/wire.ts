// The shapes of what the server answers, taken from its own TypeBox schemas, so the page cannot
// drift from the API: a renamed or retyped field fails the page's build. Type-only imports: none of
// the server's code reaches the browser.
import type { Static } from '@sinclair/typebox';
import type { HealthResponse } from '../../src/api/schemas/health.js';
import type { DecisionOptions as DecisionOptionsSchema } from '../../src/decision/schema/options.js';
import type {
  AccountSummaryResponse,
  ApiKeyCreateResponse,
  ApiKeyListItem,
  ConsoleModelFacts,
  ConsoleSessionResponse,
  UsageRow as UsageRowSchema,
} from '../../src/console/schemas.js';

export type ApiKey = Static<typeof ApiKeyListItem>;
export type CreatedKey = Static<typeof ApiKeyCreateResponse>;
export type Account = Static<typeof AccountSummaryResponse>;
export type UsageRow = Static<typeof UsageRowSchema>;
export type Session = Static<typeof ConsoleSessionResponse>;
export type ModelFacts = Static<typeof ConsoleModelFacts>;
export type Health = Static<typeof HealthResponse>;
/** The options the playground always sends, every one set. */
export type DecisionOptions = Required<Pick<Static<typeof DecisionOptionsSchema>, 'debias' | 'debias_passes' | 'return_raw_probabilities'>>;
