import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Orderly from '../../src/index.js';
import type * as OrderlyKafka from '../../src/kafka/index.js';
import type * as Disputes from '../../testkit/scenarios/disputes.js';
import type * as DisputesExample from '../../examples/disputes/topology.js';

/** orderly as users run it, compiled: the modules a benchmark's orderly worker needs from `dist/`. */
export interface CompiledOrderly {
  /** The `dist/` directory they were loaded from. */
  readonly dist: string;
  readonly orderly: typeof Orderly;
  readonly kafka: typeof OrderlyKafka;
  readonly disputes: typeof Disputes;
  readonly disputesExample: typeof DisputesExample;
}

/**
 * Loads orderly from a compiled `dist/` (this tree's, or `ORDERLY_BENCH_DIST`'s: another tree's
 * build with the same API, to compare two versions under one harness), not from the TypeScript
 * sources through tsx: tsx's `keepNames` wraps every closure orderly makes per event in a call of
 * its own and so charges orderly for the loader's work. tsx leaves the `.js` files of `dist/` as
 * they are.
 */
export async function loadCompiled(): Promise<CompiledOrderly> {
  const dist = process.env.ORDERLY_BENCH_DIST ?? fileURLToPath(new URL('../../dist/', import.meta.url));
  const load = async <T>(path: string): Promise<T> => {
    const url = pathToFileURL(`${dist.replace(/\/?$/, '/')}${path}`).href;
    try {
      return (await import(url)) as T;
    } catch (error) {
      throw new Error(`bench: ${url} could not be loaded (${(error as Error).message}); run npm run build first`, { cause: error });
    }
  };
  return {
    dist,
    orderly: await load<typeof Orderly>('src/index.js'),
    kafka: await load<typeof OrderlyKafka>('src/kafka/index.js'),
    disputes: await load<typeof Disputes>('testkit/scenarios/disputes.js'),
    disputesExample: await load<typeof DisputesExample>('examples/disputes/topology.js'),
  };
}
