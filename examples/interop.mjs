// Another native library allocating through the allocator (examples/interop/codec.c, built
// here with the system C compiler against the packaged cca.h), its memory attributed to it
// by name, and a buffer handed to it as a DLPack tensor. Runs on a GPU, or on the simulator
// (where the codec must say it accepts simulated memory).
//   node examples/interop.mjs
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cuda, interop, memory } from 'cuda-caching-allocator';

const require = createRequire(import.meta.url);
const out = join(mkdtempSync(join(tmpdir(), 'codec-')), 'codec.node');
execFileSync(process.env.CC || 'cc', ['-std=c99', '-O2', '-shared', '-fPIC', '-DNODE_GYP_MODULE_NAME=codec',
  `-I${interop.includeDir}`, `-I${require('node-api-headers').include_dir}`,
  fileURLToPath(new URL('./interop/codec.c', import.meta.url)), '-o', out]);
const codec = require(out);

codec.init(interop.allocatorApi(), cuda.isSimulated());
codec.decode();
const stats = memory.memory_stats();
console.log(`codec holds ${stats['clients.codec.allocated_bytes.current']} bytes in ${stats['clients.codec.allocation.current']} allocations`);
const tagged = memory.memory_snapshot().flatMap((s) => s.blocks).filter((b) => b.user_metadata === 'codec');
console.log(`snapshot: ${tagged.length} blocks tagged "codec"`);
codec.finish();

const frame = cuda.alloc(1920 * 1080 * 4);
const elements = codec.borrow(frame.toDLPack({ dtype: 'u8', shape: [1080, 1920, 4], allowSimulated: cuda.isSimulated() }));
console.log(`the codec borrowed a ${elements}-element frame and gave it back`);
frame.free();
console.log(`live allocations now: ${memory.memory_stats()['allocation.all.current']}`);
