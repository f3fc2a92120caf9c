export const TRAVEL_LIMIT_MIB: number;
export const NODE_MAJOR: number;
export const LLAMA_PATHS: string[];
export const PACK_FILES: { llama: string; node: string; service: string; skeleton: string };
export const DEVICE_COMMAND: string;
export const DEVICE_TIMEOUT_S: number;
export const DEVICE_TIMEOUT_S_QUICK: number;
