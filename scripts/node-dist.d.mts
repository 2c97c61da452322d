// Types for node-dist.mjs, imported by the arm64 package test.
export declare const CACHE_DIR: string;
export declare class NodeDistError extends Error {
  readonly code: 'ERR_NODE_PIN_MISSING' | 'ERR_NODE_NOT_PUBLISHED' | 'ERR_NODE_REGISTRY_UNREACHABLE';
  /** True when the registry did not answer: nothing is known to be wrong with the pin. */
  readonly unreachable: boolean;
}
export interface NodePins { architectures: string[]; versions: Record<string, string> }
export declare function readPins(): NodePins;
export declare function pinnedVersion(line: string): string;
export declare function fetchNode(arch: 'x64' | 'arm64', version: string, how?: { npm?: string[]; env?: NodeJS.ProcessEnv; cacheDir?: string }): string;
export declare function newestCommon(pins: NodePins, published: (arch: string) => Set<string>): Record<string, string | null>;
