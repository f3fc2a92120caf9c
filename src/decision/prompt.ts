// The prompt layout every question kind shares. The state goes in one prefix shared by every
// branch; each branch (one question in one option ordering) is a suffix of the same user turn.
// The engine adds the frame (chat template or plain layout) around the body built here. The
// question's name never reaches the model: names are keys for the client only.
//
//   [system: SYSTEM_PROMPT]
//   Context:
//   <state>
//   Question: <instructions>             ← the suffix starts here, never with whitespace
//   <the kind's options, one per line>
//   <the kind's reply line>

/**
 * Names the layout (wording, labels, readout). A fitted calibration is bound to it: a calibration
 * fitted under one layout is never applied under another.
 */
export const LAYOUT_VERSION = 'L4';

/**
 * A system turn that states the task once for every question. Measured (bench/RESULTS.md): it
 * moves more of the next-token mass onto the labels than the user turn alone does.
 */
export const SYSTEM_PROMPT =
  'You are a careful annotator. Read the context, then answer the question about it. Reply with exactly one of the allowed answers and nothing else.';

/** The choices a layout makes; LAYOUT is the one served, the others are measured against it. */
export interface PromptLayout {
  /** Text of the system turn; null leaves the template's default. */
  system: string | null;
  /**
   * How a score's level distribution is read: the levels shown once as lettered options (their
   * descriptions) or as their own digits (0 = lowest), or ordinal, one yes/no threshold per level
   * above the lowest ("is it this level or higher?").
   */
  scoreReadout: 'letters' | 'digits' | 'ordinal';
  /** The score distribution raised to 1/T and renormalised; 1 leaves it as read. */
  scoreTemperature: number;
}

/**
 * Chosen by the ranked probability score held out (bench:score-readouts, bench/RESULTS.md): the
 * lettered descriptions read the level best of the readouts tried, and no temperature fitted on the
 * other folds beat the distribution as read, so a score's probabilities are the model's own (T = 1).
 * Layout L3 sharpened them by T = 0.13, fitted to the share of expectations within half a level of
 * the truth: a hit rate that sharpening raises while the probabilities claim what they do not know
 * (top-level ECE 0.09 → 0.37, RPS 0.154 → 0.188).
 */
export const LAYOUT: PromptLayout = { system: SYSTEM_PROMPT, scoreReadout: 'letters', scoreTemperature: 1 };

/** Ends at a newline so that tokenising prefix and suffix apart equals tokenising them together. */
export function contextBlock(state: string): string {
  return `Context:\n${state}\n`;
}

/** The suffix of one branch: never starts with whitespace that would merge with the prefix's newline. */
export function questionBody(instructions: string | null, lines: string[], reply: string): string {
  const question = instructions !== null && instructions.trim() !== '' ? [`Question: ${instructions}`] : [];
  return [...question, ...lines, reply].join('\n');
}
