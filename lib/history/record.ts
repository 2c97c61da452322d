// _record_memory_history: PyTorch's semantics (new and legacy signatures), plus stack
// sampling. The state here tells cuda.alloc and DeviceBuffer.free what to capture.
import { native } from '../native.js';
import { ArgumentTypeError, InvalidArgumentError } from '../errors.js';
import { checkBoolean, checkInteger, checkOptions, describe, rangeError, typeError } from '../validate.js';
import { resolveDevice } from '../device.js';
import { stacks } from './stack-store.js';
import { forgetHostHistorySettings, setHostHistory } from './host-history.js';

export type HistoryEnabled = 'all' | 'state' | null;
export type HistoryContext = 'state' | 'alloc' | 'all' | null;

export interface RecordHistoryOptions {
  /** 'all': keep a trace of every event; 'state': only live blocks' stacks; null: stop. */
  enabled?: HistoryEnabled;
  /** Which stacks to keep: null none, 'state' live blocks, 'alloc' also trace entries, 'all' also free sites. */
  context?: HistoryContext;
  /**
   * 'all' (the default, as in PyTorch): JS stacks, and native backtraces for allocations made
   * through the C ABI (include/cca.h) by native code; 'js' (or PyTorch's 'python'): JS
   * stacks only, a native caller's memory then carrying one frame that names it.
   */
  stacks?: 'js' | 'all' | 'python';
  /** Ring size; forced to 1 unless enabled is 'all'. Default: unbounded. */
  maxEntries?: number;
  /** Accepted and ignored: history settings apply to every device, as in PyTorch. */
  device?: number;
  clearHistory?: boolean;
  /** Actions kept out of the ring, e.g. ['snapshot']. */
  skipActions?: string[];
  /** Capture a stack for this fraction of events (0 < rate <= 1; default 1). */
  stackSampleRate?: number;
  /** Frames kept per stack (default 16). */
  stackDepth?: number;
  /** Keep Node's own frames (node:internal/..., node:events) in stacks; by default they are dropped. */
  keepNodeFrames?: boolean;
  /** PyTorch's spellings of maxEntries, clearHistory and skipActions (one spelling per key in a call). */
  max_entries?: number;
  clear_history?: boolean;
  skip_actions?: string[];
  /** PyTorch's Python-only options: checked as booleans and ignored. */
  compile_context?: boolean;
  global_record_annotations?: boolean;
  /**
   * Also start, change or stop the history of pinned host memory (cuda.allocHost), written
   * to the snapshot's `host_segments` and `host_traces` (PyTorch 2.14's option). Host
   * history changes only in a call that passes true: `_record_memory_history(null)` alone
   * leaves it as it was, as in PyTorch; pass `{ enabled: null, record_pinned_host_memory: true }`
   * to stop it. Default false.
   */
  recordPinnedHostMemory?: boolean;
  /** false: leave device history as it is (with recordPinnedHostMemory: host memory only). Default true. */
  recordCuda?: boolean;
  /** PyTorch's spellings of recordPinnedHostMemory and recordCuda. */
  record_pinned_host_memory?: boolean;
  record_cuda?: boolean;
}

const OPTION_KEYS = [
  'enabled', 'context', 'stacks', 'maxEntries', 'device', 'clearHistory', 'skipActions', 'stackSampleRate', 'stackDepth',
  'keepNodeFrames', 'recordPinnedHostMemory', 'recordCuda',
] as const;

/**
 * PyTorch's keyword names, accepted beside ours so a call ports with only its syntax
 * changed: `{ max_entries: 100000 }` is `{ maxEntries: 100000 }`. One spelling per key in a
 * call.
 */
const PYTORCH_SPELLINGS: Record<string, (typeof OPTION_KEYS)[number]> = {
  max_entries: 'maxEntries', clear_history: 'clearHistory', skip_actions: 'skipActions',
  record_pinned_host_memory: 'recordPinnedHostMemory', record_cuda: 'recordCuda',
};

/**
 * PyTorch's options that concern Python only: checked as booleans, then ignored.
 * compile_context names torch.compile regions, global_record_annotations routes
 * record_function annotations (memory.annotate is ours, always global to the thread).
 */
const PYTHON_ONLY = ['compile_context', 'global_record_annotations'] as const;

/** Checks a Python-only key's value; false for any other key. */
function ignoredPyTorchKey(key: string, value: unknown): boolean {
  if (!(PYTHON_ONLY as readonly string[]).includes(key)) return false;
  if (value !== undefined) checkBoolean(key, value);
  return true;
}

/** Which histories a call sets: the device's (unless recordCuda is false), the host's (if asked). */
interface Targets {
  cuda: boolean;
  host: boolean;
}

function targetsOf(recordCuda: unknown, recordHost: unknown, names: [string, string]): Targets {
  const cuda = recordCuda === undefined ? true : checkBoolean(names[0], recordCuda);
  const host = recordHost === undefined ? false : checkBoolean(names[1], recordHost);
  if (!cuda && !host) {
    // Named in the spelling the caller used for record_cuda.
    const hostName = recordHost === undefined && names[0] === 'record_cuda' ? 'record_pinned_host_memory' : names[1];
    throw new InvalidArgumentError(
      `${names[0]}: false with ${hostName} not true records nothing; pass ${hostName}: true to record pinned host memory only`,
      'ERR_INVALID_ARG_VALUE',
    );
  }
  return { cuda, host };
}

/**
 * The options with PyTorch's spellings mapped to ours and its Python-only keys checked and
 * dropped; `spelled` gets the name the caller used for each mapped key, so a message names it.
 */
function portedOptions(options: unknown, spelled: Record<string, string>): unknown {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return options;
  const given = options as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    const ours = PYTORCH_SPELLINGS[key];
    if (ours !== undefined) {
      if (Object.hasOwn(given, ours)) {
        throw new ArgumentTypeError(`options give both ${key} (PyTorch's spelling) and ${ours}: pass one of them`);
      }
      out[ours] = value;
      spelled[ours] = key;
    } else if (!ignoredPyTorchKey(key, value)) {
      out[key] = value;
    }
  }
  return out;
}

/** What the hot path reads: 0 never, 1 state, 2 alloc, 3 all. */
export const capture = {
  level: 0,
  /** Capture one stack every `every` events. */
  every: 1,
  countdown: 1,
  enabled: false,
  maxEntries: 0,
};

const CONTEXT_LEVEL: Record<string, number> = { state: 1, alloc: 2, all: 3 };

let actionNames: string[] | undefined;

export function recordMemoryHistory(enabledOrOptions?: HistoryEnabled | boolean | RecordHistoryOptions, legacy?: Record<string, unknown>): void {
  if (typeof enabledOrOptions === 'boolean') return recordLegacy(enabledOrOptions, legacy ?? {});
  let o: Partial<RecordHistoryOptions>;
  const spelled: Record<string, string> = {};
  const name = (key: string): string => spelled[key] ?? key;
  if ((typeof enabledOrOptions !== 'object' && enabledOrOptions !== undefined && typeof enabledOrOptions !== 'string') ||
      Array.isArray(enabledOrOptions)) {
    throw typeError("'all', 'state', null (stop), or an options object", 'enabled', enabledOrOptions);
  }
  if (enabledOrOptions === undefined || enabledOrOptions === null || typeof enabledOrOptions === 'string') {
    o = { ...checkOptions<RecordHistoryOptions>('options', portedOptions(legacy, spelled), OPTION_KEYS), enabled: enabledOrOptions === undefined ? 'all' : enabledOrOptions };
  } else {
    o = checkOptions<RecordHistoryOptions>('options', portedOptions(enabledOrOptions, spelled), OPTION_KEYS);
  }
  const enabled = o.enabled === undefined ? 'all' : o.enabled;
  if (enabled !== null && enabled !== 'all' && enabled !== 'state') {
    throw typeError("'state', 'all', or null", 'enabled', enabled);
  }
  const context = o.context === undefined ? 'all' : o.context;
  if (context !== null && (typeof context !== 'string' || !Object.hasOwn(CONTEXT_LEVEL, context))) throw typeError("'state', 'alloc', 'all', or null", 'context', context);
  if (o.stacks !== undefined && !['js', 'all', 'python'].includes(o.stacks)) throw typeError("'js' or 'all'", 'stacks', o.stacks);
  let maxEntries = o.maxEntries === undefined ? Number.MAX_SAFE_INTEGER : checkInteger(name('maxEntries'), o.maxEntries, 0, Number.MAX_SAFE_INTEGER);
  if (enabled !== 'all') maxEntries = 1;
  const rate = o.stackSampleRate === undefined ? 1 : o.stackSampleRate;
  if (typeof rate !== 'number') throw typeError('a number in (0, 1]', 'stackSampleRate', rate);
  if (!(rate > 0 && rate <= 1)) throw rangeError('a number in (0, 1]', 'stackSampleRate', rate);
  const depth = o.stackDepth === undefined ? undefined : checkInteger('stackDepth', o.stackDepth, 1, 200);
  const skipMask = actionMask(o.skipActions, name('skipActions'));
  const clear = o.clearHistory === undefined ? false : checkBoolean(name('clearHistory'), o.clearHistory);
  const keepNode = o.keepNodeFrames === undefined ? undefined : checkBoolean('keepNodeFrames', o.keepNodeFrames);
  const targets = targetsOf(o.recordCuda, o.recordPinnedHostMemory, [name('recordCuda'), name('recordPinnedHostMemory')]);
  // Settings apply to every device, as in PyTorch; a device given must still be one.
  resolveDevice(o.device, 'device');
  // Everything is checked: only now does anything change.
  if (depth !== undefined) stacks.depth = depth;
  if (keepNode !== undefined) stacks.keepNodeFrames = keepNode;
  const level = enabled === null ? 0 : CONTEXT_LEVEL[context ?? ''] ?? 0;
  apply(enabled !== null, level, maxEntries, skipMask, clear, rate, targets, (o.stacks ?? 'all') === 'all');
}

const optionalBoolean = (o: Record<string, unknown>, key: string, fallback: boolean): boolean =>
  o[key] === undefined ? fallback : checkBoolean(key, o[key]);

function recordLegacy(enabled: boolean, o: Record<string, unknown>): void {
  const known = ['record_context', 'trace_alloc_max_entries', 'trace_alloc_record_context', 'device', 'record_context_cpp', 'clear_history',
    'skip_actions', 'record_pinned_host_memory', 'record_cuda', ...PYTHON_ONLY];
  checkOptions('legacy options', o, known);
  for (const [key, value] of Object.entries(o)) ignoredPyTorchKey(key, value);
  const recordContext = optionalBoolean(o, 'record_context', true);
  const allocContext = optionalBoolean(o, 'trace_alloc_record_context', false);
  const cpp = optionalBoolean(o, 'record_context_cpp', false);
  const clear = optionalBoolean(o, 'clear_history', false);
  const max = o.trace_alloc_max_entries === undefined ? 1 : checkInteger('trace_alloc_max_entries', o.trace_alloc_max_entries, 0, Number.MAX_SAFE_INTEGER);
  const skipMask = actionMask(o.skip_actions, 'skip_actions');
  const targets = targetsOf(o.record_cuda, o.record_pinned_host_memory, ['record_cuda', 'record_pinned_host_memory']);
  resolveDevice(o.device, 'device');
  const level = !enabled ? 0 : allocContext ? 2 : recordContext ? 1 : 0;
  apply(enabled, level, max, skipMask, clear, 1, targets, cpp);
}

/** The bit mask (1 << index in traceActionNames()) of a list of action names. */
export function actionMask(actions: unknown, name: string): number {
  if (actions === undefined || actions === null) return 0;
  if (!Array.isArray(actions)) throw typeError('an array of action names', name, actions);
  actionNames ??= native.traceActionNames();
  let mask = 0;
  for (const a of actions) {
    const i = actionNames.indexOf(a as string);
    if (i < 0) {
      throw new ArgumentTypeError(`Unknown action ${describe(a)} in ${name}; known actions are ${actionNames.join(', ')}`);
    }
    mask |= 1 << i;
  }
  return mask;
}

function apply(enabled: boolean, level: number, maxEntries: number, skipMask: number, clear: boolean, rate: number,
  targets: Targets, nativeStacks: boolean): void {
  if (targets.cuda) {
    native.setHistory(enabled, level, maxEntries, skipMask, clear);
    setCapture(enabled, level, maxEntries, clear, rate);
    // C ABI callers' backtraces, at the same context level (PyTorch's stacks="all").
    native.setNativeStacks(enabled && nativeStacks ? level : 0, stacks.depth);
  }
  if (targets.host) setHostHistory(enabled, level, maxEntries, clear);
  if (!enabled) stacks.compact();
}

// What cuda.alloc and DeviceBuffer.free read, and the annotations that go with the history.
function setCapture(enabled: boolean, level: number, maxEntries: number, clear: boolean, rate: number): void {
  capture.enabled = enabled;
  capture.level = enabled ? level : 0;
  capture.every = Math.max(1, Math.round(1 / rate));
  capture.countdown = 1;
  capture.maxEntries = enabled ? maxEntries : 0;
  if (!enabled || clear) for (const f of clearedHooks) f();
}


/** Called when history stops or is cleared: annotations drop theirs (annotations.ts registers
 *  itself, so this file imports nothing that imports it). */
const clearedHooks: (() => void)[] = [];
/** @internal */
export function onHistoryCleared(hook: () => void): void {
  clearedHooks.push(hook);
}

/** @internal The runtime was replaced (cuda.sim.configure/isolate): its history starts off. */
export function forgetHistorySettings(): void {
  setCapture(false, 0, 0, false, 1);
  forgetHostHistorySettings();
  native.setNativeStacks(0, stacks.depth);
}

/** Whether this event gets a stack, honouring the sample rate. Hot path. */
export function sampleStack(): boolean {
  if (--capture.countdown > 0) return false;
  capture.countdown = capture.every;
  return true;
}
