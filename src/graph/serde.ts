/** Turns bytes into values and back. `deserialize` throws on bad input; the engine dead-letters it. */
export interface Serde<T> {
  readonly name: string;
  serialize(value: T): Uint8Array;
  deserialize(bytes: Uint8Array): T;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** JSON in UTF-8. A payload that is not UTF-8 or not JSON fails to decode (and is dead-lettered). */
export function json<T>(): Serde<T> {
  return {
    name: 'json',
    serialize: (value) => encoder.encode(JSON.stringify(value)),
    deserialize: (bytes) => JSON.parse(decoder.decode(bytes)) as T,
  };
}

/** UTF-8 text. */
export function string(): Serde<string> {
  return {
    name: 'string',
    serialize: (value) => encoder.encode(value),
    deserialize: (bytes) => decoder.decode(bytes),
  };
}
