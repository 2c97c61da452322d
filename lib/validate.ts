// Argument checks, run before any native call. One message shape:
// "Expected <what> for <name> but received <value> of type <type>".
import { ArgumentRangeError, ArgumentTypeError } from './errors.js';

export function describe(value: unknown): string {
  let shown: string;
  if (typeof value === 'string') shown = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  else if (typeof value === 'bigint') shown = `${value}n`;
  else if (typeof value === 'function') shown = `function ${value.name || '(anonymous)'}`;
  else if (value === null) shown = 'null';
  else if (typeof value === 'object') shown = Array.isArray(value) ? 'an array' : 'an object';
  else shown = String(value);
  return `${shown} of type ${value === null ? 'null' : typeof value}`;
}

export function typeError(what: string, name: string, value: unknown, hint = ''): ArgumentTypeError {
  return new ArgumentTypeError(`Expected ${what} for ${name} but received ${describe(value)}${hint}`);
}

export function rangeError(what: string, name: string, value: unknown, hint = ''): ArgumentRangeError {
  return new ArgumentRangeError(`Expected ${what} for ${name} but received ${describe(value)}${hint}`);
}

/** A byte count: a non-negative integer Number. */
export function checkSize(name: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw typeError('a size in bytes (a non-negative integer)', name, value,
      typeof value === 'bigint' ? '; pass a Number' : '');
  }
  if (!Number.isInteger(value) || value < 0) {
    throw rangeError('a size in bytes (a non-negative integer)', name, value,
      Number.isNaN(value) ? '' : value < 0 ? '; sizes cannot be negative' : '; round it to whole bytes');
  }
  // Above 2^53 a Number no longer holds every integer, so the size asked for may not be the
  // size meant. From 1 EiB (2^60) up a request is an out-of-memory error, as in PyTorch.
  if (value > Number.MAX_SAFE_INTEGER && value < 2 ** 60) {
    throw rangeError('a size in bytes of at most 2^53-1 (Number.MAX_SAFE_INTEGER)', name, value,
      '; a Number this large is not an exact integer');
  }
  return value;
}

export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number') throw typeError(`an integer from ${min} to ${max}`, name, value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw rangeError(`an integer from ${min} to ${max}`, name, value);
  }
  return value;
}

export function checkFraction(name: string, value: unknown): number {
  if (typeof value !== 'number') throw typeError('a number from 0 to 1', name, value);
  if (!(value >= 0 && value <= 1)) throw rangeError('a number from 0 to 1', name, value);
  return value;
}

export function checkString(name: string, value: unknown): string {
  if (typeof value !== 'string') throw typeError('a string', name, value);
  return value;
}

/** An object whose every value is a string (`what` says what it maps, for the message). */
export function checkStringRecord(name: string, value: unknown, what: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) ||
    !Object.values(value).every((v) => typeof v === 'string')) {
    throw typeError(what, name, value);
  }
  return value as Record<string, string>;
}

export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw typeError('a boolean', name, value);
  return value;
}

/**
 * An options object (or undefined) with only the known keys; a misspelled key gets a hint.
 */
export function checkOptions<T extends object>(name: string, value: unknown, known: readonly string[]): Partial<T> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw typeError('an options object', name, value);
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      const near = known.find((k) => k.toLowerCase() === key.toLowerCase() || k.startsWith(key.slice(0, 4)));
      throw new ArgumentTypeError(
        `Unknown option ${JSON.stringify(key)} in ${name}; known options are ${known.join(', ')}` +
          (near ? ` (did you mean ${JSON.stringify(near)}?)` : ''),
      );
    }
  }
  return value as Partial<T>;
}
