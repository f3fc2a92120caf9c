// Splits the model's chat template around the user message, so a prompt's body can be cut into a
// shared prefix and per-branch suffixes of one user turn while the engine adds the framing.
// The frame is the engine's: callers send body text only.

/** How a prompt body is wrapped: the text before it and the text after it. */
export interface PromptFrame {
  head: string;
  /** End of the user turn and start of the model's reply. */
  tail: string;
  /** true when the model had no usable chat template and the plain layout is used */
  plain: boolean;
}

export interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

// Never NUL: llama.cpp takes C strings, and a NUL would cut the message short (it once hid every
// model's chat template behind the plain layout).
const SENTINEL = '\u2063[[ARBITRA:USER-MESSAGE]]\u2063';

/** The fallback for models whose GGUF carries no chat template (documented in docs/models.md, "What the engine prepares at load"). */
export function plainFrame(system: string | null): PromptFrame {
  return { head: system ? `${system}\n\n` : '', tail: '\nAnswer:\n', plain: true };
}

export function promptFrame(applyChatTemplate: (messages: ChatMessage[]) => string | null, system: string | null): PromptFrame {
  const messages: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  const rendered = applyChatTemplate([...messages, { role: 'user', content: SENTINEL }]);
  if (rendered === null) return plainFrame(system);
  const at = rendered.indexOf(SENTINEL);
  if (at < 0 || rendered.indexOf(SENTINEL, at + 1) >= 0) return plainFrame(system);
  // A template that drops the system turn still frames the user turn; the instructions then lead it.
  const head = rendered.slice(0, at) + (system && !rendered.includes(system) ? `${system}\n\n` : '');
  return { head, tail: rendered.slice(at + SENTINEL.length), plain: false };
}
