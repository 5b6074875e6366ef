import type { EngineObserver } from './outcomes.js';

type Callback = (arg: never) => void;

/** One observer that tells `first`, then `second`, of everything; `first` itself when there is no `second`. */
export function combineObservers(first: EngineObserver, second: EngineObserver | undefined): EngineObserver {
  if (!second) return first;
  const combined: Record<string, Callback> = {};
  const names = new Set([...Object.keys(first), ...Object.keys(second)] as Array<keyof EngineObserver>);
  for (const name of names) {
    const a = first[name] as Callback | undefined;
    const b = second[name] as Callback | undefined;
    combined[name] = (arg: never) => {
      a?.call(first, arg);
      b?.call(second, arg);
    };
  }
  return combined as EngineObserver;
}
