// PyTorch code as porters write it, beside its JavaScript: the same memory functions in the
// same order and the same keyword names, only the syntax changed (keywords become an
// options object, tensors become cuda.alloc buffers). Each JavaScript snippet runs.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { freshParityState, restoreParityState } from '../support/helpers.js';

interface Snippet {
  title: string;
  python: string;
  js: () => unknown;
}

const SNIPPETS: Snippet[] = [
  {
    title: 'what is this memory for: a label, one traceback',
    python: `
torch.cuda.memory._record_memory_history(max_entries=100000)
torch.cuda.memory._set_memory_metadata("optimizer")
x = torch.empty(1024, device="cuda")
label = torch.cuda.memory._get_memory_metadata()
frames = torch.cuda.memory._allocation_traceback(x.data_ptr())
torch.cuda.memory._set_memory_metadata("")
snapshot = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)`,
    js: () => {
      memory._record_memory_history({ max_entries: 100000 });
      memory._set_memory_metadata('optimizer');
      const x = cuda.alloc(1024 * 4);
      const label = memory._get_memory_metadata();
      const frames = memory._allocation_traceback(x.ptr);
      memory._set_memory_metadata('');
      const snapshot = memory._snapshot();
      memory._record_memory_history({ enabled: null });
      expect(label).toBe('optimizer');
      expect(frames!.length).toBeGreaterThan(0);
      expect(snapshot.segments[0]!.blocks.find((b) => b.address === x.ptr)!.user_metadata).toBe('optimizer');
    },
  },
  {
    title: 'every option of _record_memory_history in PyTorch\'s spelling',
    python: `
torch.cuda.memory._record_memory_history("all", context="all", stacks="python", max_entries=1000, clear_history=True, compile_context=False, global_record_annotations=False, skip_actions=["snapshot"], record_pinned_host_memory=False, record_cuda=True)
backend = torch.cuda.memory.get_allocator_backend()`,
    js: () => {
      memory._record_memory_history('all', { context: 'all', stacks: 'python', max_entries: 1000, clear_history: true, compile_context: false, global_record_annotations: false, skip_actions: ['snapshot'], record_pinned_host_memory: false, record_cuda: true });
      const backend = memory.get_allocator_backend();
      expect(backend).toBe('native');
    },
  },
  {
    title: 'a note on memory after the fact',
    python: `
torch.cuda.memory._record_memory_history(context="all", max_entries=1000)
t = torch.empty(64, device="cuda")
torch.cuda.memory._annotate_memory(t.data_ptr(), "saved for backward")
snapshot = torch.cuda.memory._snapshot()`,
    js: () => {
      memory._record_memory_history({ context: 'all', max_entries: 1000 });
      const t = cuda.alloc(64 * 4);
      memory._annotate_memory(t.ptr, 'saved for backward');
      const snapshot = memory._snapshot();
      expect(snapshot.device_traces[0]!.some((e) => e.action === 'annotate' && e.user_metadata === 'saved for backward')).toBe(true);
    },
  },
  {
    title: 'caching off for a compute-sanitizer run',
    python: `
torch.cuda.memory.caching_allocator_enable(False)
y = torch.empty(256, device="cuda")
del y
reserved = torch.cuda.memory.memory_reserved()
torch.cuda.memory.caching_allocator_enable(True)`,
    js: () => {
      memory.caching_allocator_enable(false);
      const y = cuda.alloc(256 * 4);
      y.free();
      const reserved = memory.memory_reserved();
      memory.caching_allocator_enable(true);
      expect(reserved).toBe(0);
    },
  },
  {
    title: 'the legacy boolean form',
    python: `
torch.cuda.memory._record_memory_history(True, trace_alloc_max_entries=100, trace_alloc_record_context=True, compile_context=False)
stats = torch.cuda.memory.memory_stats()`,
    js: () => {
      memory._record_memory_history(true, { trace_alloc_max_entries: 100, trace_alloc_record_context: true, compile_context: false });
      const stats = memory.memory_stats();
      expect(stats['num_ooms']).toBe(0);
    },
  },
];

const memoryCalls = (text: string, prefix: RegExp) => [...text.matchAll(prefix)].map((m) => m[1]);
const pythonKeywords = (text: string) => new Set([...text.matchAll(/[(,]\s*(\w+)=/g)].map((m) => m[1]));
const jsKeys = (text: string) => new Set([...text.matchAll(/[{,]\s*(\w+):/g)].map((m) => m[1]));

beforeEach(freshParityState);
afterEach(restoreParityState);

describe('PyTorch snippets, ported', () => {
  for (const s of SNIPPETS) {
    it(s.title, () => {
      const js = s.js.toString();
      expect(memoryCalls(js, /\bmemory\.(\w+)\(/g)).toEqual(memoryCalls(s.python, /torch\.cuda\.memory\.(\w+)\(/g));
      const keys = jsKeys(js);
      for (const k of pythonKeywords(s.python)) {
        if (k !== 'device') expect(keys, `keyword ${k}`).toContain(k);  // device= of torch.empty is the tensor's
      }
      s.js();
    });
  }
});
