// The `cuda` namespace: devices, streams, allocation and the simulator's controls.
import { DeviceBuffer, makeDeviceBuffer, recording } from './device-buffer.js';
import { CudaOutOfMemoryError, InvalidArgumentError } from './errors.js';
import { capture, forgetHistorySettings, sampleStack } from './history/record.js';
import { forgetCachingSettings } from './caching.js';
import { resubscribeTraces } from './history/live-trace.js';
import { stacks, tags } from './history/stack-store.js';
import { currentMetadata } from './history/metadata.js';
import { notifyOutOfMemory } from './oom.js';
import { native, nativeStatus } from './native.js';
import { AllocSlot, callSlots } from './call-slots.js';
import { Stream, checkStream, defaultStream } from './stream.js';
import { generation, setGeneration } from './generation.js';
import { resetCurrentDevice, resolveDevice } from './device.js';
import { checkBoolean, checkInteger, checkOptions, checkSize, checkString, typeError } from './validate.js';
import type { CudaProbe, SimState } from '../binding.js';

export { openIpcHandle, ipc_collect } from './interop/ipc.js';

/**
 * Whether the CUDA backend can be used here (a driver and at least one GPU), and if not,
 * why. It does not switch backends: CCA_DEVICE (default auto) chose at start.
 */
export function isAvailable(): boolean {
  return probe().available;
}

/**
 * The details behind isAvailable(): reason, device count, driver version, library path.
 * Never throws: where the native addon cannot load, `reason` says so and how to get it.
 */
export function probe(): CudaProbe {
  const status = nativeStatus();
  if (!status.available) return { available: false, reason: status.error.message, deviceCount: 0, driverVersion: 0, path: '' };
  return native.cudaProbe();
}

export { Stream, defaultStream } from './stream.js';
export { DeviceBuffer, type AsyncCopyOptions } from './device-buffer.js';
export { HostBuffer, allocHost } from './host-buffer.js';
export {
  currentDevice,
  deviceCount,
  deviceName,
  getDeviceProperties,
  isSimulated,
  runtimeInfo,
  setDevice,
} from './device.js';

export interface AllocOptions {
  /** The stream the memory will be used on (default: the default stream of `device`). */
  stream?: Stream;
  /** The device (default: the stream's device, else the current device). */
  device?: number;
  /** A label kept with the allocation: shown in snapshots as user_metadata. */
  tag?: string;
}

const ALLOC_OPTIONS = ['stream', 'device', 'tag'] as const;

/**
 * Allocates `size` bytes of device memory for use on a stream, from the cache when a
 * block fits. Throws CudaOutOfMemoryError when even an emptied cache cannot satisfy it.
 */
export function alloc(size: number, options?: AllocOptions): DeviceBuffer {
  checkSize('size', size);
  let stream: Stream;
  let tagId = currentMetadata.tagId;
  if (options === undefined) {
    stream = defaultStream();
  } else {
    const o = checkOptions<AllocOptions>('alloc options', options, ALLOC_OPTIONS);
    if (o.tag !== undefined) tagId = tags.id(checkString('options.tag', o.tag));
    if (o.stream !== undefined) {
      stream = checkStream('options.stream', o.stream);
      if (o.device !== undefined && resolveDevice(o.device, 'options.device') !== stream.device) {
        throw new InvalidArgumentError(
          `options.stream belongs to device ${stream.device} but options.device is ${o.device}; ` +
            'use a stream of the same device',
          'ERR_CCA_DEVICE_MISMATCH',
        );
      }
    } else {
      stream = defaultStream(resolveDevice(o.device, 'options.device'));
    }
  }
  const stackId = capture.level !== 0 && sampleStack() ? stacks.capture(alloc) : 0;
  const slots = callSlots();
  slots[AllocSlot.Device] = stream.device;
  slots[AllocSlot.Size] = size;
  slots[AllocSlot.Stream] = stream.handle;
  slots[AllocSlot.StackId] = stackId;
  slots[AllocSlot.TagId] = tagId;
  try {
    native.allocInSlots();
  } catch (e) {
    if (e instanceof CudaOutOfMemoryError) notifyOutOfMemory(e);
    throw e;
  }
  const buffer = makeDeviceBuffer(slots[AllocSlot.Ptr]!, size, stream, generation());
  if (recording !== null) recording.allocated.add(buffer);
  return buffer;
}

/**
 * Marks `buffer` as used by work on `stream`: when freed, its memory is reused only after
 * the work queued on `stream` until then has completed.
 */
export function recordStream(buffer: DeviceBuffer, stream: Stream): void {
  if (!DeviceBuffer.isDeviceBuffer(buffer)) throw typeError('a DeviceBuffer from cuda.alloc()', 'buffer', buffer);
  buffer.assertLive('recordStream');
  checkStream('stream', stream);
  if (stream.device !== buffer.device) {
    throw new InvalidArgumentError(
      `recordStream: the buffer is on device ${buffer.device} but the stream on device ${stream.device}`,
      'ERR_CCA_DEVICE_MISMATCH',
    );
  }
  if (buffer.ptr !== 0) native.recordStream(buffer.device, buffer.ptr, stream.handle);
}

/** Waits for all work on a device (default: the current one); completed frees are collected. */
export function synchronize(device?: number): void {
  native.deviceSynchronize(resolveDevice(device));
}

export interface SimConfigureOptions {
  /** Number of simulated devices (default 1). */
  devices?: number;
  /** Capacity of each simulated device in bytes (default 16 GiB). */
  capacityBytes?: number;
}

function simOptions(what: string, options: SimConfigureOptions | undefined): { devices: number; capacity: number } {
  const o = checkOptions<SimConfigureOptions>(what, options, ['devices', 'capacityBytes']);
  const devices = o.devices === undefined ? 1 : checkInteger('options.devices', o.devices, 1, 64);
  const capacity = o.capacityBytes === undefined ? 16 * 2 ** 30 : checkSize('options.capacityBytes', o.capacityBytes);
  if (capacity < 1 || capacity > 2 ** 40) {
    throw new InvalidArgumentError(`options.capacityBytes must be from 1 byte to 1 TiB, got ${capacity}`, 'ERR_INVALID_ARG_VALUE');
  }
  return { devices, capacity };
}

/**
 * Controls of the simulated GPU (the `sim` backend). They throw InvalidArgumentError
 * (`ERR_CCA_NOT_SIMULATED`) on a real GPU.
 */
export const sim = {
  /**
   * Replaces the runtime with fresh simulated devices. Every buffer and stream from before
   * becomes stale (using one throws). Meant for tests and demos on a single thread.
   */
  configure(options?: SimConfigureOptions): void {
    const { devices, capacity } = simOptions('sim.configure options', options);
    setGeneration(native.replaceRuntime('sim', devices, capacity));
    resetCurrentDevice();
    forgetHistorySettings();
    forgetCachingSettings();
    resubscribeTraces();
  },
  /**
   * Gives this thread simulated devices of its own, which no other thread sees: a worker
   * thread can then run a simulation (a replay, a test) while others run theirs. Works on
   * any backend, the process's runtime is untouched, and `configure()` in this thread then
   * replaces only its own devices. Buffers and streams this thread made before become stale.
   */
  isolate(options?: SimConfigureOptions): void {
    const { devices, capacity } = simOptions('sim.isolate options', options);
    setGeneration(native.isolateRuntime(devices, capacity));
    resetCurrentDevice();
    forgetHistorySettings();
    forgetCachingSettings();
    resubscribeTraces();
  },
  /** A held stream's work (and so the frees waiting on it) does not complete until released. */
  holdStream(stream: Stream, held = true): void {
    checkStream('stream', stream);
    native.simHoldStream(stream.device, stream.handle, checkBoolean('held', held));
  },
  /** Completes the work queued so far on a held stream. */
  completeStream(stream: Stream): void {
    checkStream('stream', stream);
    native.simCompleteStream(stream.device, stream.handle);
  },
  /** The next `count` device mallocs fail as if the GPU were full. */
  failNextMallocs(count: number, device?: number): void {
    native.simFailNextMallocs(resolveDevice(device), checkInteger('count', count, 0, 2 ** 31 - 1));
  },
  /** The next `count` event queries fail with a device error. */
  failNextEventQueries(count: number, device?: number): void {
    native.simFailNextEventQueries(resolveDevice(device), checkInteger('count', count, 0, 2 ** 31 - 1));
  },
  /** What the simulated device itself holds. */
  state(device?: number): SimState {
    return native.simState(resolveDevice(device));
  },
};
