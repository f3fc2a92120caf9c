export { createGate, createIpLimiter, type IpLimiter } from './gate.js';
export { loadLimitsConfig, LIMITS_DEFAULTS, type LimitsConfig } from './config.js';
export type { Admission, Charge, RequestGate } from './types.js';
