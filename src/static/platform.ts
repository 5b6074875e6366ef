import type { Node } from 'ts-morph';
import { EnvValue, NativeValue, Unknown } from './values.js';

/** `process`: its `env` is read as {@link EnvValue}; anything else of it is known only at run time. */
export class ProcessValue {}

const math = Object.fromEntries(
  (['max', 'min', 'floor', 'ceil', 'round', 'trunc', 'abs', 'pow', 'sqrt'] as const).map((name) => [
    name,
    new NativeValue(`Math.${name}`, (args) => (Math[name] as (...a: number[]) => number)(...(args as number[]))),
  ]),
);

const numberStatics = Object.fromEntries(
  (['isInteger', 'isFinite', 'isNaN', 'isSafeInteger', 'parseInt', 'parseFloat'] as const).map((name) => [
    name,
    new NativeValue(`Number.${name}`, (args) => (Number[name] as (...a: unknown[]) => unknown)(...args)),
  ]),
);

/**
 * The platform globals the evaluator knows: pure functions it may run on known arguments. Any
 * other global (Date, Math.random, fetch) gives an Unknown.
 */
export function platformGlobal(name: string, node: Node): unknown {
  switch (name) {
    case 'undefined':
      return undefined;
    case 'NaN':
      return NaN;
    case 'Infinity':
      return Infinity;
    case 'process':
      return new ProcessValue();
    case 'Math':
      return math;
    case 'Number':
      return Object.assign(new NativeValue('Number', (args) => Number(args[0])), { statics: numberStatics });
    case 'String':
      return new NativeValue('String', (args) => String(args[0]));
    case 'Boolean':
      return new NativeValue('Boolean', (args) => Boolean(args[0]));
    case 'parseInt':
      return new NativeValue('parseInt', (args) => parseInt(args[0] as string, args[1] as number | undefined));
    case 'parseFloat':
      return new NativeValue('parseFloat', (args) => parseFloat(args[0] as string));
    default:
      return new Unknown({ expression: node.getText(), node, reason: `the global '${name}', known only at run time` });
  }
}

/** `process.<property>`. */
export function processProperty(property: string, node: Node): unknown {
  if (property === 'env') return new EnvValue();
  return new Unknown({ expression: node.getText(), node, reason: `process.${property}, known only at run time` });
}

/** A read of the environment variable `name` (undefined when the name itself is not known). */
export function envRead(name: string | undefined, node: Node): Unknown {
  const reason = name === undefined ? 'an environment variable' : `environment variable ${name}`;
  return new Unknown({ expression: node.getText(), node, reason, ...(name === undefined ? {} : { env: name }) });
}

const stringMethods = new Set([
  'toLowerCase',
  'toUpperCase',
  'trim',
  'trimStart',
  'trimEnd',
  'replace',
  'replaceAll',
  'slice',
  'substring',
  'padStart',
  'padEnd',
  'concat',
  'startsWith',
  'endsWith',
  'includes',
  'split',
  'repeat',
  'at',
  'indexOf',
]);
const arrayMethods = new Set(['join', 'includes', 'at', 'indexOf', 'slice', 'concat']);

/** A method of a known string or array that the evaluator runs on known arguments. */
export function primitiveMethod(receiver: unknown, property: string): NativeValue | undefined {
  const known = typeof receiver === 'string' ? stringMethods : Array.isArray(receiver) ? arrayMethods : undefined;
  if (!known?.has(property)) return undefined;
  const method = (receiver as Record<string, (...a: unknown[]) => unknown>)[property]!;
  return new NativeValue(property, (args) => method.apply(receiver, args));
}
