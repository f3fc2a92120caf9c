// Runs the decision layer's self-test once the model serves, without holding up start-up, and logs
// what it found. A failed run (the engine went away meanwhile) is logged, never thrown.
import { selfTest, selfTestReport } from '../decision/self-test.js';
import type { EngineInfo, EngineService } from '../engine/types.js';

export function runSelfTest(engine: EngineService, info: EngineInfo, model: string, log: (line: string) => void): void {
  selfTest(engine, info).then(
    (result) => selfTestReport(model, result).forEach((line) => log(line)),
    (err: Error) => log(`self-test of ${model} could not run: ${err.message}`),
  );
}
