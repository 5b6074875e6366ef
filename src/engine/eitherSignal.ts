/** A signal aborted as soon as `a` or `b` is, with that one's reason; `end` stops listening to both. */
export function eitherSignal(a: AbortSignal, b: AbortSignal): { readonly signal: AbortSignal; end(): void } {
  const controller = new AbortController();
  const fromA = () => controller.abort(a.reason);
  const fromB = () => controller.abort(b.reason);
  const end = () => {
    a.removeEventListener('abort', fromA);
    b.removeEventListener('abort', fromB);
  };
  if (a.aborted) fromA();
  else if (b.aborted) fromB();
  else {
    a.addEventListener('abort', fromA, { once: true });
    b.addEventListener('abort', fromB, { once: true });
  }
  return { signal: controller.signal, end };
}
