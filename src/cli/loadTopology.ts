import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Topology } from '../dsl/topology.js';

/**
 * Imports MODULE (a path, relative to the working directory) and returns its default export as a
 * Topology. A TypeScript module is compiled on import by tsx, registered only then.
 */
export async function loadTopology(module: string): Promise<Topology> {
  const path = resolve(module);
  if (!existsSync(path)) {
    throw new Error(
      `the module '${module}' does not exist (${path}): give the path of the module whose default export is the Topology, relative to the current directory (${process.cwd()})`,
    );
  }
  const url = pathToFileURL(path).href;
  if (isTypeScript(module)) await registerTypeScript(module);
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new Error(`cannot import '${module}': give a JavaScript (.js, .mjs) or TypeScript (.ts, .mts) module whose default export is a Topology`, {
        cause: error,
      });
    }
    throw refusedIn(module, error);
  }
  let exported = namespace.default;
  // A .ts file that Node.js loads as CommonJS comes with its `export default` under module.exports.default.
  if (!isTopology(exported) && typeof exported === 'object' && exported !== null && 'default' in exported) exported = exported.default;
  let topology: unknown;
  try {
    topology = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  } catch (error) {
    throw refusedIn(module, error);
  }
  if (!isTopology(topology)) {
    const named = Object.keys(namespace).filter((name) => name !== 'default' && isTopology(namespace[name]));
    const found =
      named.length > 0
        ? `; it exports ${named.map((name) => `'${name}'`).join(', ')} by name: export the one to run as default (export default ${named[0]})`
        : exported === undefined
          ? '; it has no default export'
          : '';
    throw new Error(`'${module}' must export a Topology by default (export default stream(...)...build()), or a function that returns one${found}`);
  }
  return topology;
}

/** A chain the DSL refused while the module built it, named with the module (the DSL's error names the operator); any other error as it is. */
function refusedIn(module: string, error: unknown): unknown {
  if (!(error instanceof Error) || error.name !== 'TopologyError') return error;
  return new Error(`'${module}' builds a topology the DSL refuses: ${error.message}`, { cause: error });
}

function isTopology(value: unknown): value is Topology {
  const candidate = value as Partial<Topology> | undefined;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.source?.topic === 'string' && Array.isArray(candidate.processors);
}

function isTypeScript(module: string): boolean {
  return /\.[mc]?tsx?$/.test(module);
}

/**
 * Registers tsx's module hooks in this process, so that import() compiles TypeScript: the ESM
 * hooks, and the CommonJS ones for a .ts file outside a `"type": "module"` package, which Node.js
 * loads as CommonJS.
 */
async function registerTypeScript(module: string): Promise<void> {
  try {
    const [esm, cjs] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]);
    cjs.register();
    esm.register();
  } catch (error) {
    throw new Error(
      `cannot load tsx to import the TypeScript module '${module}': ${(error as Error).message}; reinstall orderly (tsx is one of its dependencies), or compile the module to .js (tsc) and give that`,
      { cause: error },
    );
  }
}
