// The public sets the quality benches know, by name. A set's file names are unique across the
// registry, so a folder's files say which set it holds.
import { agnews } from './agnews.js';
import { boolq } from './boolq.js';
import type { PublicSet } from './set.js';
import { sst5 } from './sst5.js';
import { trec } from './trec.js';

export const SETS: readonly PublicSet[] = [sst5, boolq, agnews, trec];
