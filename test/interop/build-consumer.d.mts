// Types for build-consumer.mjs (test/system/ops.test.ts imports it).
export function buildConsumer(includeDir: string, outDir: string): string;
