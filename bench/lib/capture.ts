// The engine request the decision layer builds for a body, captured without scoring it: what the
// benches hand to the engine directly or turn into prompts for a baseline server.
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';
import { decide } from '../../src/decision/decide.js';
import type { EngineInfo, EngineService, TextScoreRequest } from '../../src/engine/types.js';

class Captured extends Error {
  constructor(readonly request: TextScoreRequest) {
    super('captured');
  }
}

export async function engineRequestFor(body: object, info: EngineInfo): Promise<TextScoreRequest> {
  const capture: EngineService = {
    info: async () => info,
    scoreText: async (request) => {
      throw new Captured(request);
    },
  };
  const err = await decide(validateSystemOneRequest(body), capture, info, { maxPromptTokens: 1 << 30 }).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof Captured)) throw new Error(`the decision layer built no engine request: ${String(err)}`);
  return err.request;
}
