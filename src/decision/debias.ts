// How `permute` treats one probe: the orderings its answers are shown in, and how the passes'
// distributions pool into one. Unordered answers (a choice, yes/no) are rotated and their passes
// averaged; a scale is read ascending and descending and pooled in log space, which cancels a
// trend in position bias exactly (permutations.ts and readout.ts say why).
import { balancedOrderings, mirroredOrderings, type Ordering } from './permutations.js';
import { averagePasses, geometricPool, type PassReading } from './readout.js';

export interface Permutation {
  name: 'rotated' | 'mirrored';
  orderings(answers: number, passes: number): Ordering[];
  pool(passes: PassReading[]): number[];
}

export const ROTATED: Permutation = { name: 'rotated', orderings: balancedOrderings, pool: averagePasses };

export const MIRRORED: Permutation = { name: 'mirrored', orderings: mirroredOrderings, pool: geometricPool };
