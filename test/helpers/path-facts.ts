// The facts of a covered CPU path (exact kernels, flash attention on, zen4, our products), for
// tests that judge a path or compare engines by them without loading a model.
import type { PathFacts } from '../../src/engine/exact-path.js';

export const CPU_PATH: PathFacts = {
  backend: 'cpu',
  kernels: 'exact',
  kvLayout: 'shared',
  quantMethod: 'Q4_K_M',
  flashAttention: true,
  flashAttentionOnLayerDevice: true,
  kvGather: false,
  offloadedLayers: 0,
  offloadableLayers: 29,
  experts: 0,
  headSizeK: 128,
  headSizeV: 128,
  cpuVariant: 'zen4',
  cpuVariants: ['zen4', 'haswell'],
  cpuProducts: 'arbitra',
};
