// The wasm engine's calls (engine.ts's EnginePort) over the module native/wasm/ builds: no
// Node API here, so the viewer's Web Worker runs the same code (wasm-engine.ts loads the
// module in Node). Each call returns a status; its numbers come back in the module's scratch
// array of doubles and its error, if any, as a code, a message and the kind's name, turned into
// the class the addon would have thrown (errorFromNative), so replay cannot tell the engines
// apart.
import { errorFromNative, InvalidArgumentError } from '../errors.js';
import type { TraceAction, TraceEntry } from '../snapshot/types.js';
import type { EnginePort, MallocPlan, ReplayEngine } from './engine-types.js';
import type { AllocatorOptionRow } from '../../binding.js';

/** The emscripten module's exports that the port calls (native/wasm/replay_engine.cpp). */
export interface CcaModule {
  HEAPF64: Float64Array;
  UTF8ToString(ptr: number): string;
  stringToUTF8(s: string, ptr: number, max: number): void;
  lengthBytesUTF8(s: string): number;
  _malloc(n: number): number;
  _free(ptr: number): void;
  _cca_out_ptr(): number;
  _cca_error_code(): number;
  _cca_error_message(): number;
  _cca_text(): number;
  _cca_engine_create(capacity: number, settings: number): number;
  _cca_engine_destroy(): void;
  _cca_check_settings(settings: number): number;
  _cca_settings_json(settings: number): number;
  _cca_options_json(): number;
  _cca_size_policy(settings: number, size: number): number;
  _cca_stream_create(): number;
  _cca_stream_destroy(stream: number): number;
  _cca_stream_synchronize(stream: number): number;
  _cca_pool_create(): number;
  _cca_pool_begin(pool: number): number;
  _cca_pool_end(pool: number): number;
  _cca_pool_release(pool: number): number;
  _cca_alloc(size: number, stream: number): number;
  _cca_free(ptr: number): number;
  _cca_record_stream(ptr: number, stream: number): number;
  _cca_empty_cache(): number;
  _cca_sim_hold_stream(stream: number, held: number): number;
  _cca_sim_complete_stream(stream: number): number;
  _cca_sim_fail_next_mallocs(count: number, afterBytes: number): number;
  _cca_place_segment(size: number, stream: number, pool: number, small: number, layout: number, blocks: number): number;
  _cca_unplace_segment(base: number): number;
  _cca_plan_malloc(size: number, stream: number, pool: number): number;
  _cca_stat_keys(): number;
  _cca_stat_value(index: number): number;
  _cca_reset_peaks(): number;
  _cca_free_state(): number;
  _cca_free_default_segments(): number;
  _cca_record_history(maxEntries: number, skipMask: number): number;
  _cca_history(): number;
  _cca_validate(): number;
  _cca_error_kinds(): number;
  _cca_action_names(): number;
  _cca_oom_fields(): number;
}

/** The calls of one loaded module, with its errors thrown as the addon's classes. */
export class WasmCalls {
  readonly m: CcaModule;
  readonly #kinds: string[];
  readonly #oomFields: string[];
  readonly actions: TraceAction[];

  constructor(m: CcaModule) {
    this.m = m;
    this.#kinds = this.lines(m._cca_error_kinds());
    this.#oomFields = this.lines(m._cca_oom_fields());
    this.actions = this.lines(m._cca_action_names()) as TraceAction[];
  }

  /** The scratch array's i-th number (read after the call: it moves when it grows). */
  out(i: number): number {
    return this.m.HEAPF64[(this.m._cca_out_ptr() >> 3) + i]!;
  }

  /** Throws the error a non-zero status stands for. */
  check(status: number): void {
    if (status === 0) return;
    const kind = this.#kinds[status - 1] ?? 'allocator';
    const fields: Record<string, number> = {};
    if (kind === 'oom') this.#oomFields.forEach((name, i) => { fields[name] = this.out(i); });
    throw errorFromNative(kind, this.m.UTF8ToString(this.m._cca_error_message()), this.m.UTF8ToString(this.m._cca_error_code()), fields);
  }

  /** cca_text after a call that sets it, split into lines. */
  lines(status: number): string[] {
    return this.text(status).split('\n');
  }

  text(status: number): string {
    this.check(status);
    return this.m.UTF8ToString(this.m._cca_text());
  }

  /** Calls `f` with `s` as a C string in the module's heap. */
  withString<T>(s: string, f: (ptr: number) => T): T {
    const n = this.m.lengthBytesUTF8(s) + 1;
    const ptr = this.m._malloc(n);
    try {
      this.m.stringToUTF8(s, ptr, n);
      return f(ptr);
    } finally {
      this.m._free(ptr);
    }
  }
}

const SEGMENT_EVENTS_SKIP: readonly TraceAction[] = ['alloc', 'free_requested', 'free_completed', 'snapshot', 'oom'];

function open(c: WasmCalls, capacityBytes: number, settings: string): EnginePort {
  const { m } = c;
  c.withString(settings, (p) => c.check(m._cca_engine_create(capacityBytes, p)));
  const keys = c.lines(m._cca_stat_keys());
  const one = (status: number): number => {
    c.check(status);
    return c.out(0);
  };
  return {
    settings: () => JSON.parse(c.text(m._cca_settings_json(0))) as Record<string, unknown>,
    streamCreate: () => one(m._cca_stream_create()),
    streamDestroy: (h) => c.check(m._cca_stream_destroy(h)),
    streamSynchronize: (h) => c.check(m._cca_stream_synchronize(h)),
    poolCreate: () => one(m._cca_pool_create()),
    poolBegin: (n) => c.check(m._cca_pool_begin(n)),
    poolEnd: (n) => c.check(m._cca_pool_end(n)),
    poolRelease: (n) => c.check(m._cca_pool_release(n)),
    alloc: (size, stream) => one(m._cca_alloc(size, stream)),
    free: (ptr) => c.check(m._cca_free(ptr)),
    recordStream: (ptr, stream) => c.check(m._cca_record_stream(ptr, stream)),
    emptyCache: () => c.check(m._cca_empty_cache()),
    holdStream: (h, held) => c.check(m._cca_sim_hold_stream(h, held ? 1 : 0)),
    completeStream: (h) => c.check(m._cca_sim_complete_stream(h)),
    failNextMallocs: (count, afterBytes) => c.check(m._cca_sim_fail_next_mallocs(count, afterBytes)),
    placeSegment: (size, stream, pool, small, layout) => {
      if (layout.length % 3 !== 0) throw new InvalidArgumentError('placeSegment: the layout holds 3 numbers per live block', 'ERR_INVALID_ARG_VALUE');
      const bytes = layout.length * 8;
      const ptr = m._malloc(Math.max(8, bytes));
      try {
        m.HEAPF64.set(layout, ptr >> 3);
        c.check(m._cca_place_segment(size, stream, pool, small ? 1 : 0, ptr, layout.length / 3));
      } finally {
        m._free(ptr);
      }
      return Float64Array.from({ length: 1 + layout.length / 3 }, (_, i) => c.out(i));
    },
    unplaceSegment: (base) => c.check(m._cca_unplace_segment(base)),
    planMalloc: (size, stream, pool): MallocPlan => {
      c.check(m._cca_plan_malloc(size, stream, pool));
      return {
        cached: c.out(0) ? { ptr: c.out(1), size: c.out(2) } : null,
        limited: c.out(3) !== 0,
        limitReleases: c.out(4) !== 0,
        oversizeRetries: c.out(5) !== 0,
        oversizeSizes: Array.from({ length: c.out(6) }, (_, i) => c.out(7 + i)),
      };
    },
    statKeys: () => keys,
    statValue: (i) => one(m._cca_stat_value(i)),
    resetPeaks: () => c.check(m._cca_reset_peaks()),
    freeState: () => {
      c.check(m._cca_free_state());
      return { reserved: c.out(0), active: c.out(1), largestFree: c.out(2) };
    },
    emptyDefaultSegments: () => {
      c.check(m._cca_free_default_segments());
      return Array.from({ length: c.out(0) }, (_, k) => ({
        small: c.out(1 + 4 * k) !== 0, stream: c.out(2 + 4 * k), size: c.out(3 + 4 * k), address: c.out(4 + 4 * k),
      }));
    },
    recordSegmentEvents: (maxEntries) => {
      const mask = SEGMENT_EVENTS_SKIP.reduce((bits, a) => bits | (1 << c.actions.indexOf(a)), 0);
      c.check(m._cca_record_history(maxEntries, mask));
    },
    segmentEvents: (): TraceEntry[] => {
      c.check(m._cca_history());
      const base = m._cca_out_ptr() >> 3;
      const h = m.HEAPF64;
      return Array.from({ length: h[base]! }, (_, i) => ({
        action: c.actions[h[base + 1 + 4 * i]!]!, addr: h[base + 2 + 4 * i]!, size: h[base + 3 + 4 * i]!,
        stream: h[base + 4 + 4 * i]!, time_us: 0, compile_context: '', user_metadata: '',
      }));
    },
    validate: () => c.text(m._cca_validate()),
    close: () => m._cca_engine_destroy(),
  };
}

/** The wasm engine over the module `load` gives (loaded on first use, once). */
export function wasmEngineOf(load: () => CcaModule): ReplayEngine {
  let calls: WasmCalls | undefined;
  const get = () => (calls ??= new WasmCalls(load()));
  return {
    name: 'wasm',
    sizePolicy: (settings, size) => {
      const c = get();
      c.withString(settings, (p) => c.check(c.m._cca_size_policy(p, size)));
      return { rounded: c.out(0), segment: c.out(1) };
    },
    settingsDict: (settings) => {
      const c = get();
      return JSON.parse(c.withString(settings, (p) => c.text(c.m._cca_settings_json(p)))) as Record<string, unknown>;
    },
    options: () => {
      const c = get();
      return JSON.parse(c.text(c.m._cca_options_json())) as AllocatorOptionRow[];
    },
    checkSettings: (settings) => {
      const c = get();
      c.withString(settings, (p) => c.check(c.m._cca_check_settings(p)));
    },
    open: (capacityBytes, settings) => open(get(), capacityBytes, settings),
  };
}
