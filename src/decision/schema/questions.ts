// The questions a decision answers: one variant per kind, discriminated by `type`. Unknown members
// are allowed (TypeBox's default), so newer clients keep working.
import { Type } from '@sinclair/typebox';
import { Entry, MemberName } from './entry.js';

const Instructions = Type.Optional(Entry);

export const NoulCriteria = Type.Object(
  {
    true: Type.Optional(Entry),
    false: Type.Optional(Entry),
  },
  { description: 'What a yes ("true") and a no ("false") mean.' },
);

/**
 * A yes/no question. `yes_no` is accepted as an alias and answered as `noul`; a question that has
 * no `type` at all is a noul question (the only variant that can be recognised without one).
 */
export const NoulQuestion = Type.Object({
  type: Type.Optional(Type.Union([Type.Literal('noul'), Type.Literal('yes_no')], { default: 'noul' })),
  instructions: Instructions,
  criteria: Type.Optional(Type.Union([NoulCriteria, Type.Null()])),
});

export const ChoiceCriteria = Type.Union(
  [
    Type.Record(MemberName, Entry, { description: 'label → description (null for none), in order' }),
    Type.Array(Type.String(), { description: 'labels without descriptions' }),
    Type.String({ description: 'labels separated by newlines, or by commas when on one line' }),
    Type.Null(),
  ],
  { description: '2 to 255 distinct, non-empty labels.' },
);

export const ChoiceQuestion = Type.Object({
  type: Type.Literal('choice'),
  instructions: Instructions,
  criteria: Type.Optional(ChoiceCriteria),
});

export const ScoreCriteria = Type.Union(
  [
    Type.Array(Entry, { description: 'level descriptions, lowest first; level i is score i' }),
    Type.Record(MemberName, Entry, { description: 'levels in key order' }),
    Type.String({ description: 'one level per line, lowest first' }),
    Type.Null(),
  ],
  { description: '2 to 10 levels, indexed from 0.' },
);

export const ScoreQuestion = Type.Object({
  type: Type.Literal('score'),
  instructions: Instructions,
  criteria: Type.Optional(ScoreCriteria),
});

export const BoxQuestion = Type.Object(
  {
    type: Type.Literal('box'),
    instructions: Instructions,
  },
  { description: 'Preview: locate what the instructions describe in the image of the state. Needs a model that reads images; a text-only model answers 422.' },
);

export const Question = Type.Union([NoulQuestion, ChoiceQuestion, ScoreQuestion, BoxQuestion], {
  description: 'Discriminated by `type`: noul (also yes_no, and the default when type is absent), choice, score, box (preview).',
});

/** The values `type` may take, and the variant each selects. */
export const QUESTION_VARIANTS = {
  noul: NoulQuestion,
  yes_no: NoulQuestion,
  choice: ChoiceQuestion,
  score: ScoreQuestion,
  box: BoxQuestion,
} as const;
export type QuestionTypeName = keyof typeof QUESTION_VARIANTS;
