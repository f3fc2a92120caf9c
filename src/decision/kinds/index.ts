// The question kinds. Adding one is a module beside these and one line in each of the tables
// below; the compiler checks that every kind of QuestionSpec has its module. A preview kind moves
// from PREVIEW to KINDS once an engine can answer it.
import { box, type BoxSpec } from './box.js';
import { choice, type ChoiceSpec } from './choice.js';
import type { Normalises, PreviewKind, QuestionKind } from './kind.js';
import { noul, type NoulSpec } from './noul.js';
import { score, type ScoreSpec } from './score.js';

/** Questions the served engine answers. */
export type AnsweredSpec = NoulSpec | ChoiceSpec | ScoreSpec;
/** Questions the API accepts and refuses by name: no engine here can answer them. */
export type PreviewSpec = BoxSpec;
export type QuestionSpec = AnsweredSpec | PreviewSpec;
export type KindName = QuestionSpec['kind'];

const KINDS: { [K in AnsweredSpec['kind']]: QuestionKind<Extract<AnsweredSpec, { kind: K }>> } = { noul, choice, score };
const PREVIEW: { [K in PreviewSpec['kind']]: PreviewKind<Extract<PreviewSpec, { kind: K }>> } = { box };
const ALL: { [K in KindName]: Normalises<Extract<QuestionSpec, { kind: K }>> } = { ...KINDS, ...PREVIEW };

export function isPreview(spec: QuestionSpec): spec is PreviewSpec {
  return Object.hasOwn(PREVIEW, spec.kind);
}

export function kindOf<S extends AnsweredSpec>(spec: S): QuestionKind<S> {
  return KINDS[spec.kind] as unknown as QuestionKind<S>;
}

export function previewKindOf<S extends PreviewSpec>(spec: S): PreviewKind<S> {
  return PREVIEW[spec.kind] as unknown as PreviewKind<S>;
}

/** Whether a question's type names a kind of its own (yes_no and a missing type do not). */
export function isKindName(type: unknown): type is KindName {
  return typeof type === 'string' && Object.hasOwn(ALL, type);
}

/** The kind a validated question's type names, for normalising it. */
export function kindNamed(name: KindName): Normalises<QuestionSpec> {
  return ALL[name] as unknown as Normalises<QuestionSpec>;
}

export type { BoxSpec, ChoiceSpec, NoulSpec, ScoreSpec };
export type { Labels, PreviewKind, QuestionKind, Reading, RenderContext, RenderedBranch } from './kind.js';
