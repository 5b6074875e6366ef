import type { Node } from 'ts-morph';
import type { GraphNode } from '../graph/nodes.js';
import { Unknown, type UnknownOrigin } from './values.js';

/** Where an unknown value is given to the DSL: the operator, its option, and the call's place. */
export interface UnknownUse {
  readonly operator: string;
  readonly option: string;
  readonly node: Node;
}

/** An unknown value of one topology, shown as `marker` in its description. */
export interface PlaceholderEntry {
  readonly marker: string;
  readonly origin: UnknownOrigin;
  readonly uses: UnknownUse[];
}

/** How every token of an unknown string starts. */
export const UNKNOWN_TOKEN_PREFIX = '__orderly_unknown_';
const TOKEN = /__orderly_unknown_(\d+)__/g;
// Far above any real option value, and whole, so that the DSL's own checks accept it.
const SENTINEL_BASE = 987_654_321_000;
const SENTINEL_TEXT = /\b987654321\d{3}\b/g;

/**
 * Stands in for unknown values while the real DSL builds the graph: an unknown string becomes a
 * token the DSL accepts as a name (and keeps inside the names it derives from it), an unknown
 * number a sentinel whole number. {@link Placeholders.reveal} then writes each as its marker.
 */
export class Placeholders {
  private readonly entries: PlaceholderEntry[] = [];
  private readonly byOrigin = new Map<string, PlaceholderEntry>();

  /** A string standing for `unknown`: a token that survives concatenation. */
  token(unknown: Unknown, use?: UnknownUse): string {
    return `__orderly_unknown_${this.indexOf(unknown, use)}__`;
  }

  /** A whole number standing for `unknown`. */
  sentinel(unknown: Unknown, use?: UnknownUse): number {
    return SENTINEL_BASE + this.indexOf(unknown, use);
  }

  /** The Unknown a token stands for, if `value` holds one. */
  unknownIn(value: string): Unknown | undefined {
    const match = /__orderly_unknown_(\d+)__/.exec(value);
    const entry = match ? this.entries[Number(match[1])] : undefined;
    return entry ? new Unknown(entry.origin) : undefined;
  }

  /** Records a use of every token in `value` (a token string given to the DSL). */
  noteUses(value: string, use: UnknownUse): void {
    for (const match of value.matchAll(TOKEN)) this.entries[Number(match[1])]?.uses.push(use);
  }

  /**
   * Copies of `nodes` with tokens and sentinels replaced by markers (`<?1>`, `<?2>`, ...), and the
   * entries of the markers that appear, numbered in order of appearance.
   */
  reveal(nodes: readonly GraphNode[]): { nodes: GraphNode[]; unknowns: PlaceholderEntry[] } {
    const markers = this.markers();
    const revealValue = (value: unknown): unknown => {
      if (typeof value === 'string') return markers.inText(value);
      if (typeof value === 'number' && this.isSentinel(value)) return markers.of(value - SENTINEL_BASE);
      if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revealValue(v)]));
      return value;
    };
    const revealed = nodes.map((node) => revealValue(node) as GraphNode);
    return { nodes: revealed, unknowns: markers.shown() };
  }

  /**
   * `message` (the DSL's error about a chain) with its tokens and sentinels written as markers, and
   * the entries of those markers: a placeholder's own spelling never reaches the user.
   */
  revealMessage(message: string): { message: string; unknowns: PlaceholderEntry[] } {
    const markers = this.markers();
    const text = markers
      .inText(message)
      .replace(SENTINEL_TEXT, (digits) => (this.isSentinel(Number(digits)) ? markers.of(Number(digits) - SENTINEL_BASE) : digits));
    return { message: text, unknowns: markers.shown() };
  }

  private markers(): { of(index: number): string; inText(text: string): string; shown(): PlaceholderEntry[] } {
    const shown = new Map<number, PlaceholderEntry>();
    const of = (index: number): string => {
      const entry = this.entries[index]!;
      if (!shown.has(index)) shown.set(index, { ...entry, marker: `<?${shown.size + 1}>` });
      return shown.get(index)!.marker;
    };
    return { of, inText: (text) => text.replace(TOKEN, (_, i: string) => of(Number(i))), shown: () => [...shown.values()] };
  }

  private isSentinel(value: number): boolean {
    return value >= SENTINEL_BASE && value - SENTINEL_BASE < this.entries.length;
  }

  private indexOf(unknown: Unknown, use: UnknownUse | undefined): number {
    const key = unknown.identity;
    let entry = this.byOrigin.get(key);
    if (!entry) {
      entry = { marker: '', origin: unknown.origin, uses: [] };
      this.byOrigin.set(key, entry);
      this.entries.push(entry);
    }
    if (use) entry.uses.push(use);
    return this.entries.indexOf(entry);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
