import { shown } from './shown.js';

/**
 * What is wrong with an options object, if anything: not an object, or naming an option that is
 * not in `known` (a misspelt option in plain JavaScript is otherwise ignored, its default taken
 * without a word). The message names the option, the nearest known one and all of them.
 */
export function optionsProblem(options: unknown, known: readonly string[], prefix = ''): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return `${prefix ? prefix.slice(0, -1) : 'its options'} must be an object, got ${shown(options)}`;
  }
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = nearest(key, known);
    return `unknown option '${prefix}${key}'${near ? ` (did you mean '${prefix}${near}'?)` : ''}; its options are ${known.map((k) => `${prefix}${k}`).join(', ')}`;
  }
  return undefined;
}

/**
 * Every option name of `T`, checked at compile time both ways: a name `T` lacks is an error, and
 * so is a list that lacks one of `T`'s options (the error names it), so the list that refuses
 * unknown options cannot fall behind the type. `everyOptionOf<DriverOptions>()(['partitions', ...])`.
 */
export function everyOptionOf<T>() {
  return <const L extends ReadonlyArray<keyof T & string>>(
    names: L & (Exclude<keyof T, L[number]> extends never ? unknown : { readonly missing: Exclude<keyof T, L[number]> }),
  ): readonly string[] => names;
}

/** The known name `key` begins (`deadLetter`), else the closest by edit distance if it is close (a typo, a case slip). */
export function nearest(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const begun = known.find((candidate) => candidate.toLowerCase().startsWith(lower));
  if (begun !== undefined && key.length >= 3) return begun;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/** Levenshtein distance, on one row. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}
