// allocInSlots's slot layout is written in C++ (native/binding/call_slots.h, AllocSlot) and in
// JS (lib/call-slots.ts, AllocSlot): this holds the two together, and the addon's behaviour
// to both (each number read from the slot the layout names, the pointer written back where it
// says).
import { readFileSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import { AllocSlot, callSlots } from '../../lib/call-slots.js';
import { memory } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { MiB, freshSim } from '../support/helpers.js';

const HEADER = readFileSync(new URL('../../native/binding/call_slots.h', import.meta.url), 'utf8');

/** AllocSlot's enumerators, as { device: 0, stackId: 3, ... } (kAllocStackId -> stackId). */
export function headerLayout(text: string): Record<string, number> {
  const body = /enum AllocSlot[^{]*\{([^}]*)\}/.exec(text)?.[1];
  if (body === undefined) throw new Error('no enum AllocSlot in call_slots.h');
  return Object.fromEntries([...body.matchAll(/kAlloc(\w+)\s*=\s*(\d+)/g)]
    .map((m) => [m[1]![0]!.toLowerCase() + m[1]!.slice(1), Number(m[2])]));
}

const JS_LAYOUT = {
  device: AllocSlot.Device, size: AllocSlot.Size, stream: AllocSlot.Stream, stackId: AllocSlot.StackId,
  tagId: AllocSlot.TagId, ptr: AllocSlot.Ptr,
};

beforeEach(() => freshSim());

describe('allocInSlots\'s slot layout', () => {
  it('is the same in call_slots.h and lib/call-slots.ts', () => {
    expect(headerLayout(HEADER)).toEqual(JS_LAYOUT);
  });

  it('is what the addon reads and writes', () => {
    const slots = callSlots();
    slots.fill(0);
    slots[AllocSlot.Device] = 0;
    slots[AllocSlot.Size] = 3 * MiB;
    slots[AllocSlot.Stream] = 0;
    native.allocInSlots();
    const ptr = slots[AllocSlot.Ptr]!;
    expect(memory.memory_allocated()).toBe(3 * MiB);
    native.free(0, ptr);
    expect(memory.memory_allocated()).toBe(0);
  });

  it('the header reading would see a change', () => {
    expect(headerLayout(HEADER.replace('kAllocTagId = 4', 'kAllocTagId = 5')).tagId).toBe(5);
  });
});
