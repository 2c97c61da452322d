// Node binaries from the npm registry for the suite's other Node lines and for the arm64
// package test, at the versions pinned in node-pins.json, cached in .node-versions/.
//
// Nothing here asks the registry what is newest: the registry publishes arm64 builds later
// than x64 ones, so "the newest 24" names a different release per architecture on some
// days, and a run that asked would pass or fail by the order of someone else's uploads.
// The pins move only when a person runs:
//
//   npm run node-pins -- --update     (or --check: print what --update would change)
//
// A fetch that fails says which package and version; `unreachable` tells a registry that did
// not answer (the caller skips, saying so) from a version the registry does not have (a bad
// pin: the caller fails, since that is ours to fix).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const PINS_FILE = join(root, 'scripts', 'node-pins.json');
export const CACHE_DIR = join(root, '.node-versions');
/** A hang guard for one `npm pack` of a ~30 MB tarball, not a speed check. */
const FETCH_TIMEOUT_MS = 5 * 60_000;

export class NodeDistError extends Error {
  /**
   * @param {string} message
   * @param {'ERR_NODE_PIN_MISSING' | 'ERR_NODE_NOT_PUBLISHED' | 'ERR_NODE_REGISTRY_UNREACHABLE'} code
   */
  constructor(message, code) {
    super(message);
    this.name = 'NodeDistError';
    this.code = code;
    /** True when the registry did not answer: nothing is known to be wrong with the pin. */
    this.unreachable = code === 'ERR_NODE_REGISTRY_UNREACHABLE';
  }
}

/** @returns {{ architectures: string[], versions: Record<string, string> }} */
export function readPins() {
  return JSON.parse(readFileSync(PINS_FILE, 'utf8'));
}

/**
 * The pinned version of a Node line: `line` is a major ('24') or any version of it
 * ('24.22.3', 'v24.1.0'), so a caller may pass process.versions.node.
 * @param {string} line
 */
export function pinnedVersion(line) {
  const major = String(line).replace(/^v/, '').split('.')[0];
  const pins = readPins();
  const version = pins.versions[major];
  if (!version) {
    throw new NodeDistError(
      `no Node ${major} is pinned in scripts/node-pins.json (pinned: ${Object.keys(pins.versions).join(', ')}); ` +
        `add "${major}": "" to "versions" and run \`npm run node-pins -- --update\``,
      'ERR_NODE_PIN_MISSING',
    );
  }
  return version;
}

/** Whether npm's error output says the registry has no such version (as opposed to not answering). */
function saysNotPublished(stderr) {
  return /\b(E404|ETARGET)\b|No matching version|is not in this registry/.test(stderr);
}

/**
 * The path of `node` for linux-<arch> at exactly `version`, fetched once from the registry's
 * node-linux-<arch> package and kept in .node-versions/. A fetch is unpacked beside the
 * cache and moved in whole, so an interrupted one is never taken for a cached one.
 * @param {'x64' | 'arm64'} arch
 * @param {string} version an exact version, e.g. from pinnedVersion()
 * @param {{ npm?: string[], env?: NodeJS.ProcessEnv, cacheDir?: string }} [how] the npm command line
 *   (default: `npm` on PATH) and the cache (default: .node-versions/)
 */
export function fetchNode(arch, version, how = {}) {
  const cache = how.cacheDir ?? CACHE_DIR;
  const dir = join(cache, `linux-${arch}-${version}`);
  const node = join(dir, 'package', 'bin', 'node');
  if (existsSync(node)) return node;
  const spec = `node-linux-${arch}@${version}`;
  mkdirSync(cache, { recursive: true });
  const staging = mkdtempSync(join(cache, `.fetch-${arch}-${version}-`));
  try {
    const [cmd, ...pre] = how.npm ?? ['npm'];
    try {
      execFileSync(cmd, [...pre, 'pack', spec, '--pack-destination', staging, '--silent'], {
        cwd: staging, env: how.env ?? process.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: FETCH_TIMEOUT_MS,
      });
    } catch (e) {
      const stderr = String(e.stderr ?? '');
      const detail = stderr.trim().split('\n').slice(-3).join(' | ') || e.message;
      if (saysNotPublished(stderr)) {
        throw new NodeDistError(
          `the registry has no ${spec} (${detail}); pick a version published for every architecture with \`npm run node-pins -- --update\``,
          'ERR_NODE_NOT_PUBLISHED',
        );
      }
      const why = e.code === 'ETIMEDOUT' || e.signal ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s` : detail;
      throw new NodeDistError(`could not fetch ${spec} from the registry: ${why}`, 'ERR_NODE_REGISTRY_UNREACHABLE');
    }
    const tgz = readdirSync(staging).find((f) => f.endsWith('.tgz'));
    if (!tgz) throw new NodeDistError(`npm pack ${spec} wrote no tarball`, 'ERR_NODE_REGISTRY_UNREACHABLE');
    const unpacked = join(staging, 'out');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', join(staging, tgz), '-C', unpacked]);
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return node;
}

/** The versions npm's registry lists for node-linux-<arch>. */
function publishedVersions(arch) {
  const out = execFileSync('npm', ['view', `node-linux-${arch}`, 'versions', '--json'], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: FETCH_TIMEOUT_MS,
  });
  return new Set(JSON.parse(out));
}

function compareVersions(a, b) {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i] - pb[i];
  return 0;
}

/**
 * Per pinned line, the newest plain release (no prerelease tag) published for every
 * architecture: what `--update` would write.
 * @param {{ architectures: string[], versions: Record<string, string> }} pins
 * @param {(arch: string) => Set<string>} published
 */
export function newestCommon(pins, published) {
  const sets = pins.architectures.map((a) => published(a));
  const next = {};
  for (const major of Object.keys(pins.versions)) {
    const common = [...sets[0]].filter((v) => /^\d+\.\d+\.\d+$/.test(v) && v.split('.')[0] === major && sets.every((s) => s.has(v)));
    common.sort(compareVersions);
    next[major] = common.at(-1) ?? null;
  }
  return next;
}

function main(args) {
  const update = args.includes('--update');
  if (!update && !args.includes('--check')) {
    console.log(`usage: npm run node-pins -- --check | --update\npinned: ${JSON.stringify(readPins().versions)}`);
    return 0;
  }
  const pins = readPins();
  const next = newestCommon(pins, publishedVersions);
  let changed = false;
  for (const [major, version] of Object.entries(next)) {
    if (version === null) {
      console.error(`node-pins: no Node ${major} release is published for all of ${pins.architectures.join(', ')}; ${major} keeps ${pins.versions[major] || '(none)'}`);
      continue;
    }
    if (version !== pins.versions[major]) {
      console.log(`node-pins: Node ${major}: ${pins.versions[major] || '(none)'} -> ${version}`);
      if (update) pins.versions[major] = version;
      changed = true;
    }
  }
  if (!changed) console.log('node-pins: every pin is the newest release published for every architecture');
  else if (update) writeFileSync(PINS_FILE, `${JSON.stringify(pins, null, 2)}\n`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main(process.argv.slice(2));
