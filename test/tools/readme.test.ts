// The README's example runs as written (against the built package) and prints what its
// comments say.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

// Examples that run kernels need the cuda backend: here our fake driver, fake NVRTC and fake
// cuBLAS (built by the C++ tests), whose kernels and GEMMs are CPU functions.
const FAKE = new URL('../../build-tests/libfakecuda.so', import.meta.url).pathname;
const FAKE_NVRTC = new URL('../../build-tests/libfakenvrtc.so', import.meta.url).pathname;
const FAKE_CUBLAS = new URL('../../build-tests/libfakecublas.so', import.meta.url).pathname;
function envFor(code: string): NodeJS.ProcessEnv {
  if (!/\bcompute\./.test(code)) return { ...process.env, CCA_DEVICE: 'sim' };
  return { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_NVRTC_PATH: FAKE_NVRTC, CCA_CUBLAS_PATH: FAKE_CUBLAS, CCA_CUBLASLT_PATH: FAKE_CUBLAS };
}

describe('README example', () => {
  it('every js example runs as written', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const entry = new URL('../../dist/index.js', import.meta.url).href;
    for (const code of blocks) {
      const dir = tempDir('cca-readme-');
      const file = join(dir, 'example.mjs');
      writeFileSync(file, code.replace("'cuda-caching-allocator'", JSON.stringify(entry)));
      const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', env: envFor(code) });
      for (const m of code.matchAll(/console\.log\((.*?)\);\s*\/\/ (Float32Array\(\d+\) \[[^\]]*\])/g)) expect(out).toContain(m[2]);
    }
  });

  it('every js example in docs/ runs too (with the import added where a block has none)', () => {
    const docs = ['api.md', 'history-and-snapshots.md', 'tools.md', 'monitoring.md', 'compute.md'];
    // The monitoring peers, resolved from this repository (the examples run from a temp folder).
    const peers = new Map(['prom-client', '@opentelemetry/api', '@opentelemetry/sdk-metrics'].map((name) =>
      [name, pathToFileURL(createRequire(import.meta.url).resolve(name)).href]));
    const localize = (code: string) => code.replace(/from '(prom-client|@opentelemetry\/[a-z-]+)'/g, (_m, name: string) => `from ${JSON.stringify(peers.get(name))}`)
      .replace(/^import \{[^}]*\} from 'cuda-caching-allocator';\n/m, '');
    const entry = new URL('../../dist/index.js', import.meta.url).href;
    const header = `import { cuda, compute, memory, analysis, replay, MemPool, use_mem_pool, loadSnapshot, Stream, DeviceBuffer, CudaOutOfMemoryError } from ${JSON.stringify(entry)};\n`;
    let ran = 0;
    for (const doc of docs) {
      const text = readFileSync(new URL(`../../docs/${doc}`, import.meta.url), 'utf8');
      for (const m of text.matchAll(/```js\n([\s\S]*?)```/g)) {
        const code = m[1]!;
        if (/^import /m.test(code) && code.trim().split('\n').length === 1) continue;  // the import line alone
        const dir = tempDir('cca-docs-');
        const file = join(dir, 'example.mjs');
        writeFileSync(file, header.replace('CudaOutOfMemoryError }', 'CudaOutOfMemoryError, monitoring }') + localize(code));
        const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', env: envFor(code) });
        for (const c of code.matchAll(/console\.log\((.*?)\);\s*\/\/ (Float32Array\(\d+\) \[[^\]]*\]|true)/g)) expect(out).toContain(c[2]);
        ran++;
      }
    }
    expect(ran).toBeGreaterThanOrEqual(3);
  });

  it('runs and prints the numbers its comments promise', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const code = /```js\n([\s\S]*?)```/.exec(readme)![1]!;
    const entry = new URL('../../dist/index.js', import.meta.url).href;
    const dir = tempDir('cca-readme-');
    const file = join(dir, 'example.mjs');
    writeFileSync(file, code.replace("'cuda-caching-allocator'", JSON.stringify(entry)));
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, CCA_DEVICE: 'sim' } });
    const lines = out.split('\n');
    expect(lines[0]).toBe('62914560');
    expect(lines[1]).toBe('67108864');
    expect(lines[2]).toBe('1');
    expect(out).toContain('memory summary, device ID 0');
    for (const m of code.matchAll(/console\.log\((.*?)\);\s*\/\/ (\d+):/g)) expect(out).toContain(m[2]);
  });
});
