// The allocator options table (native/allocator/policy/options.h) is the one description of every
// option: the docs' table is generated from it, the parser refuses each kind's bad values
// naming the key, the "did you mean" hint comes from it, the settings dict has exactly its
// settings, and replay writes a settings dict back through it to the same settings.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configFromSettings } from '../../lib/allocator-options.js';
import { nativeEngine } from '../../lib/replay/native-engine.js';
import { SMALL_SEGMENT, SMALL_SIZE } from '../../lib/replay/sizes.js';
import { native } from '../../lib/native.js';
// @ts-expect-error: a plain ES module of the scripts, without types
import { DOC, optionsTable, withTable } from '../../scripts/gen-options-docs.mjs';

const rows = native.allocatorOptions();
const refused = (config: string) => {
  try {
    native.checkAllocatorSettings(config);
  } catch (e) {
    return e as Error & { code: string };
  }
  throw new Error(`accepted: ${config}`);
};

describe('the allocator options table', () => {
  it('generates docs/configuration.md\'s table (node scripts/gen-options-docs.mjs writes it)', () => {
    const text = readFileSync(DOC, 'utf8');
    expect(withTable(text, optionsTable(rows))).toBe(text);
  });

  it('drives the parser: each kind\'s bad value is refused, naming the key', () => {
    const bad: Record<string, [string, RegExp]> = {
      megabytes: ['x', /Expected a non-negative integer for KEY but got 'x'/],
      count: ['-1', /Expected a non-negative integer for KEY but got '-1'/],
      number: ['x', /Expected a number for KEY but got 'x'/],
      boolean: ['true', /Expected value True or False for KEY but got 'true'/],
      divisions: ['y', /Expected a non-negative integer for KEY but got 'y'/],
      word: ['x', /KEY:x is not supported/],
    };
    for (const r of rows) {
      const [value, message] = bad[r.kind]!;
      const e = refused(`${r.key}:${value}`);
      expect(e.code, r.key).toBe('ERR_CCA_INVALID_CONFIG');
      expect(e.message, r.key).toMatch(new RegExp(message.source.replace('KEY', r.key)));
    }
  });

  it('drives the hint for a misspelt key', () => {
    for (const r of rows) {
      expect(refused(`${r.key.slice(0, -1)}:1`).message).toContain(`Did you mean '${r.key}'?`);
    }
  });

  it('names exactly the settings dict\'s entries', () => {
    const settings = rows.filter((r) => r.setting !== null).map((r) => r.setting);
    expect(Object.keys(native.allocatorSettings('')).sort()).toEqual(['PYTORCH_CUDA_ALLOC_CONF', ...settings].sort());
  });

  it('writes a settings dict back as a config string that gives the same dict', () => {
    const configs = ['', 'max_split_size_mb:64', 'expandable_segments:True,garbage_collection_threshold:0.75',
      'roundup_power2_divisions:[64:8,256:4,>:1]', 'roundup_power2_divisions:4,pinned_num_register_threads:8',
      'release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,graph_capture_record_stream_reuse:True',
      'per_process_memory_fraction:0.5,garbage_collection_threshold:0.6', 'per_process_memory_fraction:1'];
    for (const config of configs) {
      const { PYTORCH_CUDA_ALLOC_CONF: _source, ...dict } = native.allocatorSettings(config);
      const again = configFromSettings(dict, nativeEngine);
      const { PYTORCH_CUDA_ALLOC_CONF: _again, ...dictAgain } = native.allocatorSettings(again);
      expect(dictAgain, `${config} -> ${again}`).toEqual(dict);
    }
    expect(configFromSettings({}, nativeEngine)).toBe('');
    expect(configFromSettings({ max_split_size: -1, expandable_segments: 'yes' }, nativeEngine)).toBe('');
  });

  it('shows the memory fraction as set by the config, -1 when not (a fraction of 1.0 set still caps)', () => {
    expect(native.allocatorSettings('').per_process_memory_fraction).toBe(-1);
    expect(native.allocatorSettings('per_process_memory_fraction:0.25').per_process_memory_fraction).toBe(0.25);
    expect(native.allocatorSettings('per_process_memory_fraction:1').per_process_memory_fraction).toBe(1);
  });
});

describe('replay\'s size constants', () => {
  it('are the allocator\'s: a small request gets a 2 MiB segment up to SMALL_SIZE, and a large one above it', () => {
    expect(nativeEngine.sizePolicy('', 1).segment).toBe(SMALL_SEGMENT);
    expect(nativeEngine.sizePolicy('', SMALL_SIZE).segment).toBe(SMALL_SEGMENT);
    expect(nativeEngine.sizePolicy('', SMALL_SIZE + 1).segment).not.toBe(SMALL_SEGMENT);
  });
});
