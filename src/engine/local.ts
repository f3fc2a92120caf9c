// The engine service in the process that owns the model: text in, candidate log-probs out.
import { promptFrame } from './frame.js';
import { findOptionLabels, findYesNo } from './labels.js';
import { LlamaEngine } from './llama-engine.js';
import { EngineError, type EngineInfo, type EngineOptions, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';

/** The frame's fixed pieces, tokenised once at load (control tokens parsed). */
interface FrameTokens {
  /** BOS to put before a prefix; empty when the model has none or the head spells it out. */
  bos: Int32Array;
  head: Int32Array;
  tail: Int32Array;
}

export class LocalEngine implements EngineService {
  private constructor(
    readonly engine: LlamaEngine,
    private readonly engineInfo: EngineInfo,
    private readonly frameTokens: FrameTokens,
  ) {}

  static async create(modelPath: string, options: Partial<EngineOptions> = {}): Promise<LocalEngine> {
    const engine = await LlamaEngine.load(modelPath, options);
    const tokenize = (text: string) => engine.tokenize(text, { addSpecial: false, parseSpecial: false });
    const frame = promptFrame((m) => engine.applyChatTemplate(m));
    const bos = engine.tokenize('', { addSpecial: true });
    const head = engine.tokenize(frame.head, { parseSpecial: true });
    const tail = engine.tokenize(frame.tail, { parseSpecial: true });
    // Some templates spell out the BOS token themselves; adding another would double it.
    const bosInHead = bos.length > 0 && head[0] === bos[0];
    const info: EngineInfo = { ...engine.facts, frame, optionLabels: findOptionLabels(tokenize), ...findYesNo(tokenize) };
    return new LocalEngine(engine, info, { bos: bosInHead ? new Int32Array(0) : bos, head, tail });
  }

  async info(): Promise<EngineInfo> {
    return this.engineInfo;
  }

  /**
   * Only the frame's own text may produce control tokens: a caller's state or question that
   * spells out e.g. "<start_of_turn>" stays plain text instead of opening a turn.
   */
  private tokenizeFramed(text: string, withBos: boolean): Int32Array {
    const { head, tail } = this.engineInfo.frame;
    const parts: Int32Array[] = [];
    let body = text;
    if (withBos) parts.push(this.frameTokens.bos);
    if (head && body.startsWith(head)) {
      parts.push(this.frameTokens.head);
      body = body.slice(head.length);
    }
    const framedTail = tail !== '' && body.endsWith(tail);
    if (framedTail) body = body.slice(0, body.length - tail.length);
    parts.push(this.engine.tokenize(body, { parseSpecial: false }));
    if (framedTail) parts.push(this.frameTokens.tail);
    const out = new Int32Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  async scoreText(request: TextScoreRequest): Promise<TextScoreResult> {
    if (request.branches.length === 0) throw new EngineError('invalid_request', 'at least one branch is needed');
    const prefix = this.tokenizeFramed(request.prefix, true);
    const suffixes = request.branches.map((b) => this.tokenizeFramed(b.suffix, false));
    const longest = Math.max(...suffixes.map((s) => s.length));
    const needed = prefix.length + longest;
    if (needed > request.maxPromptTokens) {
      throw new EngineError('context_exceeded', `the prompt needs ${needed} tokens, more than the limit of ${request.maxPromptTokens}`, {
        tokens: needed,
        limit: request.maxPromptTokens,
        prefixTokens: prefix.length,
      });
    }
    const outcome = await this.engine.score(
      prefix,
      request.branches.map((b, i) => ({ suffix: suffixes[i]!, candidates: Int32Array.from(b.candidates) })),
    );
    return {
      branches: outcome.logprobs.map((lp) => Array.from(lp)),
      promptTokens: prefix.length + suffixes.reduce((n, s) => n + s.length, 0),
      prefixTokens: prefix.length,
      evaluatedTokens: outcome.evaluated,
      cachedTokens: outcome.cached,
    };
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

export function createLocalEngine(modelPath: string, options: Partial<EngineOptions> = {}): Promise<LocalEngine> {
  return LocalEngine.create(modelPath, options);
}
