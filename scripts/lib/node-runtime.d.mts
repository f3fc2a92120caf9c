export const NODE_WHEEL: { version: string; file: string; sha256: string };
export const NODE_ABI: number;
export function nodeRuntimeTarball(cacheDir: string, log: (msg: string) => void): Promise<string>;
