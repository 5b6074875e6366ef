/** A stand-in provider's budget: at most `limit` (calls or tokens) in fixed windows of `windowMs`, the first starting at the first use. */
export class FixedWindow {
  private startMs = -Infinity;
  private used = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Takes `amount` if it fits in the window of `nowMs`. */
  take(nowMs: number, amount: number): { readonly taken: boolean; readonly remaining: number; readonly resetMs: number } {
    if (nowMs >= this.startMs + this.windowMs) {
      this.startMs = nowMs;
      this.used = 0;
    }
    const taken = this.used + amount <= this.limit;
    if (taken) this.used += amount;
    return { taken, remaining: taken ? this.limit - this.used : 0, resetMs: this.startMs + this.windowMs - nowMs };
  }

  /** The window of `nowMs` as it stands, taking nothing. */
  peek(nowMs: number): { readonly taken: boolean; readonly remaining: number; readonly resetMs: number } {
    return this.take(nowMs, 0);
  }

  /** Gives back what a refused call took. */
  giveBack(amount: number): void {
    this.used = Math.max(0, this.used - amount);
  }
}
