// Two processes sharing one GPU buffer over CUDA IPC: this one loads "weights" and forks a
// worker, which maps them, checks them and writes an answer into them; this one reads the
// answer, frees its buffer, and the memory goes back once the worker has let go. Needs the
// cuda backend (a GPU; the suite runs it on the fake driver): the simulator cannot share.
//   node examples/ipc-share.mjs
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { cuda, memory } from 'cuda-caching-allocator';
import { requireCuda } from './requirements.mjs';

const WORDS = 1 << 18;  // 1 MiB of "weights"

requireCuda('ipc-share');

if (process.argv[2] === 'worker') {
  const [message] = await once(process, 'message');
  const weights = cuda.openIpcHandle(new Uint8Array(Buffer.from(message.handle, 'base64')));
  const head = weights.copyTo(new Uint32Array(4));
  const tail = weights.copyTo(new Uint32Array(1), (WORDS - 1) * 4);
  console.log(`worker ${process.pid}: mapped ${weights.size} bytes, first words ${Array.from(head).join(',')}, last ${tail[0]}`);
  weights.copyFrom(new Uint32Array([0xc0ffee]), 0);  // the answer, in the shared memory
  weights.free();  // unmaps: the memory is the loader's
  process.send('done');
  process.disconnect();
} else {
  const weights = cuda.alloc(WORDS * 4);
  weights.copyFrom(Uint32Array.from({ length: WORDS }, (_, i) => i));
  const worker = fork(fileURLToPath(import.meta.url), ['worker'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  worker.send({ handle: Buffer.from(weights.ipcHandle()).toString('base64') });
  await once(worker, 'message');
  console.log(`loader ${process.pid}: the worker wrote 0x${weights.copyTo(new Uint32Array(1))[0].toString(16)}`);
  weights.free();  // the worker closed it already, so this frees at once (else: cuda.ipc_collect() later)
  console.log(`loader: freed; ${memory.memory_stats()['allocation.all.current']} allocations live`);
  await once(worker, 'exit');
}
