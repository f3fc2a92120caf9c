// The question kinds. Adding one is a module beside these and one line in each of the two below;
// the compiler checks that every kind of QuestionSpec has its module.
import { choice, type ChoiceSpec } from './choice.js';
import type { QuestionKind } from './kind.js';
import { noul, type NoulSpec } from './noul.js';
import { score, type ScoreSpec } from './score.js';

export type QuestionSpec = NoulSpec | ChoiceSpec | ScoreSpec;
export type KindName = QuestionSpec['kind'];

const KINDS: { [K in KindName]: QuestionKind<Extract<QuestionSpec, { kind: K }>> } = { noul, choice, score };

export function kindOf<S extends QuestionSpec>(spec: S): QuestionKind<S> {
  return KINDS[spec.kind] as unknown as QuestionKind<S>;
}

export function kindNamed(name: KindName): QuestionKind<QuestionSpec> {
  return KINDS[name] as unknown as QuestionKind<QuestionSpec>;
}

export type { ChoiceSpec, NoulSpec, ScoreSpec };
export type { Labels, QuestionKind, Reading, RenderContext, RenderedBranch } from './kind.js';
