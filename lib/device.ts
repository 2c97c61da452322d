// Devices: how many, which one is current, and what each one is.
import { native, nativeStatus } from './native.js';
import { checkInteger } from './validate.js';
import type { DeviceInfo, RuntimeInfo } from '../binding.js';

let current = 0;
// The count cannot change while a runtime lives, and every call that takes a device index
// checks it: read once per runtime (resetCurrentDevice clears it), not per call.
let count: number | undefined;

/** The backend in use and why it was chosen (the simulator says so). */
/**
 * Which backend serves the live allocator, and why. Never throws: where the native addon
 * cannot load, `backend` is 'none' and `note` says why and how to get it.
 */
export function runtimeInfo(): RuntimeInfo {
  const status = nativeStatus();
  if (!status.available) return { backend: 'none', deviceCount: 0, note: status.error.message, generation: 0, isolated: false };
  return native.runtimeInfo();
}

export function deviceCount(): number {
  return (count ??= native.runtimeInfo().deviceCount);
}

/** Checks a device index (default: the current device) against the device count. */
export function resolveDevice(device: unknown, name = 'device'): number {
  if (device === undefined || device === null) return current;
  return checkInteger(name, device, 0, deviceCount() - 1);
}

export function currentDevice(): number {
  return current;
}

/** Sets the device used when a call names none. */
export function setDevice(device: number): void {
  current = checkInteger('device', device, 0, deviceCount() - 1);
}

/** Name, total memory, and whether the device is simulated. */
export function getDeviceProperties(device?: number): DeviceInfo {
  return native.deviceInfo(resolveDevice(device));
}

export function deviceName(device?: number): string {
  return getDeviceProperties(device).name;
}

export function isSimulated(device?: number): boolean {
  return getDeviceProperties(device).simulated;
}

/** Resets the current device (and the count) when the runtime is replaced. */
export function resetCurrentDevice(): void {
  current = 0;
  count = undefined;
}
