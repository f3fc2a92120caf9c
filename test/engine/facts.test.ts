// Model facts against the GGUF's own metadata (read here without llama.cpp), and the stats counters.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import t from 'tap';
import { LlamaEngine } from '../../src/engine/llama-engine.js';
import { loadAddon } from '../../src/engine/native.js';
import { readGgufHeader } from './gguf.js';
import { createLocalEngine } from '../../src/engine/local.js';
import { sha256File } from '../../src/models/checksum.js';
import { CHAT_MODEL, TEST_MODEL } from '../helpers/models.js';

const MODEL = TEST_MODEL;
// llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M
const FTYPE_Q4_K_M = 15;

const header = readGgufHeader(MODEL);
const engine = await LlamaEngine.load(MODEL, { threads: 2, contextSize: 1024, longContextSize: 0, maxSequences: 6 });
t.teardown(() => engine.close());
const facts = engine.facts;

t.test('facts match the GGUF metadata', async (t) => {
  const meta = header.metadata;
  const arch = meta.get('general.architecture');
  t.equal(arch, 'gemma3', 'the file is a gemma3 model');
  t.equal(facts.architecture, arch);
  t.equal(meta.get('general.file_type'), FTYPE_Q4_K_M, 'the file says Q4_K_M');
  t.equal(facts.quantMethod, 'Q4_K_M');
  t.equal(facts.quantBits, 4);
  const ctx = meta.get(`${typeof arch === 'string' ? arch : '?'}.context_length`);
  t.equal(ctx, 32768);
  t.equal(facts.trainingContext, ctx, 'training context is the GGUF context_length');
  const tokens = meta.get('tokenizer.ggml.tokens');
  t.ok(tokens && typeof tokens === 'object', 'the GGUF holds a token list');
  t.equal(facts.vocabSize, (tokens as { length: number }).length, 'vocab size is the token list length');
  t.equal(facts.hasChatTemplate, meta.has('tokenizer.chat_template'), 'chat template presence matches the metadata');
  t.equal(facts.hasChatTemplate, false, 'the default model is a base model without a template');
  t.equal(engine.applyChatTemplate([{ role: 'user', content: 'hi' }]), null, 'no template to apply');
  t.match(facts.sha256, /^[0-9a-f]{64}$/);
  t.equal(facts.sha256, await sha256File(MODEL), "the checksum calibrations are bound to is the file's sha256");
});

t.test('a model with a chat template is framed by it, not by the plain layout', async (t) => {
  // The template sentinel once held a NUL, which llama.cpp's C strings cut at: every model fell
  // back to the plain layout without a word.
  const chat = await createLocalEngine(CHAT_MODEL, { threads: 2, contextSize: 512, maxSequences: 4 });
  t.teardown(() => chat.close());
  const info = await chat.info();
  t.equal(info.hasChatTemplate, true);
  t.equal(info.promptFrame, 'chat');
  const framed = chat.framedText({ system: 'Be brief.', prefix: 'Context:\nx\n', branches: [{ suffix: 'Question?', answers: [[1]] }] });
  t.equal(framed.prefix, '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nContext:\nx\n');
  t.equal(framed.suffixes[0], 'Question?<|im_end|>\n<|im_start|>assistant\n');
  const tokens = chat.tokenizeRequest({ system: null, prefix: 'Context:\n<|im_start|>x\n', branches: [{ suffix: 'Q', answers: [[1]] }] });
  const imStart = chat.engine.tokenize('<|im_start|>', { parseSpecial: true });
  t.equal(imStart.length, 1, '<|im_start|> is one control token');
  t.equal(tokens.prefix.filter((id) => id === imStart[0]).length, 1, "only the frame opens a turn; the body's <|im_start|> stays text");
  t.equal(tokens.suffixes[0]!.filter((id) => id === imStart[0]).length, 1, 'the tail opens the assistant turn');
});

t.test('facts about the file, the build and the options', async (t) => {
  t.equal(facts.path, MODEL);
  t.equal(facts.fileSize, fs.statSync(MODEL).size);
  // 268M parameters is the published size of Gemma 3 270M; embeddings make up most of it.
  t.ok(facts.parameters > 250e6 && facts.parameters < 300e6, `parameter count ${facts.parameters}`);
  t.match(facts.description, /gemma3/i);
  const addon = loadAddon();
  t.equal(facts.backend, addon.backend);
  if (facts.backend === 'cpu') t.equal(facts.gpuMemoryMb, null, 'no GPU memory on the CPU backend');
  else t.ok(facts.gpuMemoryMb !== null && facts.gpuMemoryMb > 0, 'GPU memory is reported');
  const info = JSON.parse(fs.readFileSync('node_modules/node-llama-cpp/llama/llama.cpp.info.json', 'utf8')) as { tag: string };
  const commit = execFileSync('git', ['-C', 'deps/llama.cpp', 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  t.equal(facts.llamaBuild, `${info.tag}-${commit}`, 'llama.cpp build id is the pinned tag and the source commit');
  const variants = addon.cpuVariants();
  t.same(
    facts.cpuVariants,
    variants.filter((v) => v.runnable).map((v) => v.name),
    "the variants this processor runs, in the addon's order: best first",
  );
  t.equal(facts.cpuVariant, facts.cpuVariants[0] ?? 'built-in', 'unpinned, the engine loads the best of them');
  if (process.arch === 'x64') t.equal(facts.cpuProducts, 'arbitra', "x86-64 builds carry AVX2, FMA and F16C: the engine's own k-quant products");
  if (process.arch === 'x64' && process.platform === 'linux')
    t.ok(
      variants.some((v) => v.name === 'haswell' && v.runnable),
      'an x86-64 build carries x86-64-v3',
    );
  t.equal(facts.threads, 2);
  t.equal(facts.contextSize, 1024, 'the longest prompt is --ctx-size');
  t.equal(facts.kvLayout, 'shared', 'one pool is the default');
  t.equal(facts.kvCells, 1024 + 2048, 'the pool holds the longest prompt plus one batch');
  t.equal(facts.maxSequences, 6);
});

t.test('the attention path as resolved and the shape that decides its kernels, against the GGUF', async (t) => {
  const meta = header.metadata;
  t.equal(facts.headSizeK, meta.get('gemma3.attention.key_length'), 'key head size');
  t.equal(facts.headSizeV, meta.get('gemma3.attention.value_length'), 'value head size');
  t.equal(facts.offloadableLayers, Number(meta.get('gemma3.block_count')) + 1, 'the blocks and the output layer');
  t.equal(facts.experts, 0, 'a dense model');
  if (facts.backend === 'cpu') t.equal(facts.offloadedLayers, 0, 'nothing on a GPU');
  t.equal(facts.flashAttentionAsked, 'on', 'exact kernels ask for flash attention on');
  t.equal(facts.flashAttention, true, 'and the context resolved it on');
  t.equal(facts.flashAttentionOnLayerDevice, true);
  if (facts.backend === 'cpu') t.equal(facts.kvGather, false, "the CPU's exact kernel gathers by itself: no copy");
});

t.test("a copied stream holds whole tiles of 256 cells whatever --ctx-size asks, so CUDA's attention packing never meets an unpadded length", async (t) => {
  const copied = await LlamaEngine.load(MODEL, { threads: 2, kvLayout: 'copied', contextSize: 1000, longContextSize: 0, maxSequences: 2 });
  t.teardown(() => copied.close());
  t.equal(copied.facts.contextSize, 1024);
});

t.test('stats counters move with each call', async (t) => {
  const before = engine.stats();
  t.equal(before.pending, 0);
  const prefix = engine.tokenize('Stats check: the counters below must move.\n', { addSpecial: true });
  const suffix = engine.tokenize('Answer:');
  const candidates = Int32Array.from([engine.tokenize(' yes')[0]!]);
  const running = engine.score(prefix, [
    { suffix, candidates },
    { suffix: engine.tokenize('Reply:'), candidates },
  ]);
  t.equal(engine.stats().pending, 1, 'a call in flight is pending');
  const r = await running;
  const after = engine.stats();
  t.equal(after.decodes - before.decodes, 2, 'two decodes: the prefix with the first branch behind it, then the second branch');
  t.equal(after.tokensEvaluated - before.tokensEvaluated, r.evaluated, 'tokensEvaluated grew by what the call evaluated');
  t.ok(after.decodeSeconds > before.decodeSeconds, 'time in llama_decode was counted');
  t.ok(after.readoutSeconds > before.readoutSeconds, 'time reading log-probs out was counted');
  t.equal(after.branchesScored - before.branchesScored, 2);
  t.equal(after.jobsDone - before.jobsDone, 1);
  t.equal(after.lastBatchBranches, 1, 'the last decode held the second branch');
  t.equal(after.pending, 0);
  // queueDepth and cachedPrefixes are refreshed by the loop thread just after it hands results to JS.
  // Microseconds as a rule; the bound is only for a machine that stalls the thread.
  const deadline = Date.now() + 30_000;
  let settled = engine.stats();
  while ((settled.queueDepth !== 0 || settled.cachedPrefixes === 0) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    settled = engine.stats();
  }
  t.equal(settled.queueDepth, 0, 'the queue drains');
  t.ok(settled.cachedPrefixes >= 1, 'the prefix stays cached');
  t.ok(settled.kvCellsHeld >= prefix.length, `the cached prefix's cells are counted as held (${settled.kvCellsHeld})`);
  t.ok(
    after.kvCellsPeak >= prefix.length + suffix.length && after.kvCellsPeak <= settled.kvCellsHeld + prefix.length + 16,
    `the peak counts the prefix and the decode's tokens, not the pool (${after.kvCellsPeak} of ${engine.facts.kvCells})`,
  );
});
