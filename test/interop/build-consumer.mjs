// Compiles test/interop/consumer.c, the C ABI's test consumer, as another library's build
// would: C99, against the packaged header (interop.includeDir) and Node-API's headers only.
// Returns the path of the .node file (built once per output folder).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function buildConsumer(includeDir, outDir) {
  const out = join(outDir, 'consumer.node');
  if (existsSync(out)) return out;
  mkdirSync(outDir, { recursive: true });
  const napi = createRequire(import.meta.url)('node-api-headers').include_dir;
  const source = fileURLToPath(new URL('./consumer.c', import.meta.url));
  execFileSync(process.env.CC || 'cc', ['-std=c99', '-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC',
    '-DNODE_GYP_MODULE_NAME=consumer', `-I${includeDir}`, `-I${napi}`, source, '-o', out, '-ldl', '-lpthread'],
  { stdio: ['ignore', 'inherit', 'inherit'] });
  return out;
}
