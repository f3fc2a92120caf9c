// Prompt layout. The state goes in one prefix shared by every branch; each branch (one question in
// one option ordering) is a suffix holding the question's instructions, criteria, lettered options
// and a one-line answer instruction, closed by the frame's tail (end of the user turn, start of
// the model's). The question's name never reaches the model: names are keys for the client only.
//
//   <head>Context:
//   <state>
//   Question: <instructions>            ← suffix starts here, never with whitespace
//   Options:
//   A. <label> - <description>
//   B. <label>
//   Reply with only the letter of the best option.<tail>
import type { EngineInfo, PromptFrame, TextBranch } from '../engine/types.js';
import type { QuestionSpec } from './normalise.js';
import type { Ordering } from './permutations.js';

export type PromptInfo = Pick<EngineInfo, 'frame' | 'optionLabels' | 'yes' | 'no'>;

/** Ends at a newline so that tokenising prefix and suffix apart equals tokenising them together. */
export function buildPrefix(frame: PromptFrame, state: string): string {
  return `${frame.head}Context:\n${state}\n`;
}

/** How many answer tokens a question offers (its option count). */
export function optionCount(q: QuestionSpec): number {
  if (q.kind === 'noul') return 2;
  return q.kind === 'choice' ? q.options.length : q.levels.length;
}

function described(name: string, description: string | null): string {
  return description ? `${name} - ${description}` : name;
}

/** The suffix and answer tokens of one question shown in one ordering (ordering[position] = option). */
export function buildBranch(q: QuestionSpec, ordering: Ordering, info: PromptInfo): TextBranch {
  const lines: string[] = [];
  if (q.instructions !== null && q.instructions.trim() !== '') lines.push(`Question: ${q.instructions}`);
  let candidates: number[];
  if (q.kind === 'noul') {
    // Options are [yes, no]; the ordering decides which is offered first.
    const answers = [
      { word: info.yes.label.trim(), token: info.yes.token, meaning: q.yes },
      { word: info.no.label.trim(), token: info.no.token, meaning: q.no },
    ];
    const shown = ordering.map((i) => answers[i]!);
    for (const a of shown) if (a.meaning) lines.push(`${a.word} means: ${a.meaning}`);
    lines.push(`Reply with only ${shown[0]!.word} or ${shown[1]!.word}.`);
    candidates = shown.map((a) => a.token);
  } else {
    const labels = info.optionLabels.slice(0, ordering.length);
    lines.push(q.kind === 'choice' ? 'Options:' : 'Levels:');
    ordering.forEach((option, position) => {
      const text =
        q.kind === 'choice'
          ? described(q.options[option]!.label, q.options[option]!.description)
          : described(String(option), q.levels[option] || null);
      lines.push(`${labels[position]!.label.trim()}. ${text}`);
    });
    lines.push(q.kind === 'choice' ? 'Reply with only the letter of the best option.' : 'Reply with only the letter of the best matching level.');
    candidates = labels.map((l) => l.token);
  }
  return { suffix: lines.join('\n') + info.frame.tail, candidates };
}
