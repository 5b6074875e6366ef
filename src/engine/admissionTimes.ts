/** How many distinct admission times a window keeps; past it the oldest go, so a count from them comes out lower, never higher. */
const KEPT = 4_096;

/**
 * The times at which one window of the rate gate admitted calls, each with the index of the first
 * call admitted at that time: enough to count the calls admitted from any time on.
 */
export class AdmissionTimes {
  private readonly atMs: number[] = [];
  private readonly firstIndex: number[] = [];

  /** Call `index` of the window was admitted at `atMs` (times never go back). */
  add(atMs: number, index: number): void {
    if (this.atMs.at(-1) === atMs) return;
    this.atMs.push(atMs);
    this.firstIndex.push(index);
    if (this.atMs.length > KEPT) {
      this.atMs.shift();
      this.firstIndex.shift();
    }
  }

  /** The calls admitted at or after `fromMs` and before call `index` (call `index` among them). */
  countFrom(fromMs: number, index: number): number {
    let lo = 0;
    let hi = this.atMs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.atMs[mid]! < fromMs) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.atMs.length ? Math.max(0, index - this.firstIndex[lo]!) : 0;
  }

  clear(): void {
    this.atMs.length = 0;
    this.firstIndex.length = 0;
  }
}
