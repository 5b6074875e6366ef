import { stateKeys } from './stateKeys.js';

/**
 * The format version of every value orderly stores, in LevelDB and in its changelogs.
 *
 * - 1: the values of orderly before stored formats had versions: plain JSON, no version anywhere.
 * - 2: the same shapes as 1, with the version carried beside each value: in LevelDB a prefix
 *   `v2:` before the JSON, in a changelog record the header `orderly-format: 2` (the value stays
 *   plain JSON, for other tools).
 * - 3: as 2, and a table row's changelog record may carry effect records in the header
 *   `orderly-effects` (src/kafka/changelog/carriedEffects.ts). Only such a record is marked 3:
 *   every other value keeps version 2, whose shape it still has. Read, no longer written: 4
 *   holds the same records without headers.
 * - 4: changelog records without headers: the version is a prefix of the value (`v4:` before the
 *   JSON, as in LevelDB), and a table row's record may carry effect records after its JSON, one
 *   line each. Headers cost the client about 2 µs per record to write and 6 µs to read
 *   (docs/benchmarks.md). LevelDB values keep version 2.
 *
 * A reader takes a value without a version as version 1 and refuses one newer than this
 * ({@link StoredFormatError}): it cannot know what a newer orderly meant by it.
 */
export const STORED_FORMAT_VERSION = 4;

/** The changelog format whose records carry their version in the value, not in a header. */
export const VALUE_MARKED_FORMAT_VERSION = 4;

/** The version of every value whose shape has not changed since it: LevelDB values, and changelog records of format 2. */
export const BASE_FORMAT_VERSION = 2;

/** Why stored format 3 is refused as a format to write. */
export const FORMAT_3_NOT_WRITTEN =
  'stored format 3 (effect records carried in a changelog header) is read but no longer written: use 4, the same records without headers, cheaper to write and to read (docs/state.md)';

/** The changelog header that carries a record's format version. */
export const FORMAT_HEADER = 'orderly-format';

/** Thrown when a stored value was written in a format newer than this orderly reads. */
export class StoredFormatError extends Error {
  constructor(
    /** The store the value belongs to (as `describe()` names it), or `checkpoint`. */
    readonly store: string,
    /** The version the value carries. */
    readonly version: number,
    /** The state key of the value. */
    readonly key: string,
    where: string,
  ) {
    super(
      `store '${store}': ${where} '${key}' is in stored format ${version}, and this orderly reads formats 1 to ${STORED_FORMAT_VERSION}; ` +
        'it was written by a newer orderly: upgrade orderly on this worker (every worker of the group must run a version that reads it)',
    );
    this.name = 'StoredFormatError';
  }
}

const LOCAL_PREFIX = `v${BASE_FORMAT_VERSION}:`;
const MARKED_PREFIX = `v${VALUE_MARKED_FORMAT_VERSION}:`;

/** A changelog record's value at format 4: `v4:` then the JSON. */
export function markedFromJson(json: string): string {
  return MARKED_PREFIX + json;
}

/** A value as LevelDB stores it (version 2): `v2:` then its JSON. `undefined` for a value JSON cannot hold. */
export function encodeLocalValue(value: unknown): string | undefined {
  const json = JSON.stringify(value) as string | undefined;
  return json === undefined ? undefined : LOCAL_PREFIX + json;
}

/** The local form of a value whose JSON is already made: `v2:` then the JSON. */
export function localFromJson(json: string): string {
  return LOCAL_PREFIX + json;
}

/**
 * A value as LevelDB holds it, read back. Text that starts with `v<digits>:` carries its version
 * (no JSON text starts with `v`); any other text is JSON of version 1.
 */
export function decodeLocalValue(key: string, text: string): unknown {
  if (text.startsWith(LOCAL_PREFIX)) return JSON.parse(text.slice(LOCAL_PREFIX.length));
  if (text.charCodeAt(0) !== 0x76 /* v */) return JSON.parse(text);
  return JSON.parse(afterVersion(key, text, 'the local value of'));
}

/**
 * The text after a value's version prefix (`v<digits>:`), the version checked; `where` names the
 * value in errors. For text that starts with `v` (no JSON text does).
 */
export function afterVersion(key: string, text: string, where: string): string {
  // Every changelog record of format 4 starts so: no expression to run.
  if (text.startsWith(MARKED_PREFIX)) return text.slice(MARKED_PREFIX.length);
  const prefix = /^v([1-9]\d{0,8}):/.exec(text);
  if (prefix === null) throw new Error(`${where} '${key}' starts with 'v' but has no format version ('v<number>:'); it was not written by orderly`);
  checkVersion(key, Number(prefix[1]), where);
  return text.slice(prefix[0].length);
}

/** The version a changelog record's headers carry: 1 without the header. */
export function recordVersion(key: string, headers: Readonly<Record<string, string>> | undefined): number {
  const header = headers?.[FORMAT_HEADER];
  if (header === undefined) return 1;
  const version = Number(header);
  if (!Number.isInteger(version) || version < 1)
    throw new Error(`changelog record '${key}': its header ${FORMAT_HEADER} is '${header}', not a format version; it was not written by orderly`);
  checkVersion(key, version, 'the changelog record');
  return version;
}

function checkVersion(key: string, version: number, where: string): void {
  if (version <= STORED_FORMAT_VERSION) return;
  throw new StoredFormatError(storeNameOf(key), version, key, where);
}

function storeNameOf(key: string): string {
  if (key.startsWith('checkpoint/')) return 'checkpoint';
  try {
    return stateKeys.storeOf(key);
  } catch {
    return key.split('/')[1] ?? key;
  }
}
