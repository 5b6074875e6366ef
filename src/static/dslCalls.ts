import type { Node } from 'ts-morph';
import { effect, madeByEffect } from '../dsl/effect.js';
import { json, string } from '../dsl/serde.js';
import { stream, StreamBuilder } from '../dsl/stream.js';
import type { ProcessorNode, SourceNode } from '../graph/nodes.js';
import { UNKNOWN_TOKEN_PREFIX, type Placeholders } from './placeholders.js';
import { FunctionValue, Unknown } from './values.js';

/**
 * What each argument of a DSL function or operator is, so that an evaluated argument can be handed
 * to the real DSL: names and numbers as themselves (or a placeholder when unknown), functions,
 * schemas and serdes as stand-ins (describe() prints none of them), effects by their name.
 */
type Shape = 'string' | 'number' | 'fraction' | 'disposition' | 'function' | 'schema' | 'serde' | 'effect' | { readonly [option: string]: Shape };

const nameOption = { name: 'string' } as const;

/** Each argument: its name (as the DSL's errors call it) and its shape. */
type Signature = ReadonlyArray<readonly [string, Shape]>;

const functionShapes: Readonly<Record<string, Signature>> = {
  stream: [
    ['topic', 'string'],
    ['options', { value: 'serde', deadLetterTopic: 'string', effectId: 'function' }],
  ],
  effect: [
    ['name', 'string'],
    ['apply', 'function'],
    ['options', { timeoutMs: 'number' }],
  ],
  json: [],
  string: [],
};

const operatorShapes: Readonly<Record<string, Signature>> = {
  filter: [
    ['predicate', 'function'],
    ['options', nameOption],
  ],
  mapValues: [
    ['mapper', 'function'],
    ['options', nameOption],
  ],
  keyedSerial: [['options', { name: 'string', maxInFlight: 'number' }]],
  agentStep: [
    ['name', 'string'],
    ['decide', 'function'],
    ['options', { schema: 'schema', limit: { calls: 'number', tokens: 'number', windowMs: 'number', expectedTokens: 'number' }, timeoutMs: 'number' }],
  ],
  route: [
    ['name', 'string'],
    ['rule', 'function'],
  ],
  shadow: [
    ['name', 'string'],
    ['handler', 'function'],
    ['options', { agrees: 'function', topic: 'string', maxWaitMs: 'number' }],
  ],
  fallback: [
    ['name', 'string'],
    ['handler', 'function'],
    ['options', { afterMs: 'number', halfOpenAfterMs: 'number' }],
  ],
  park: [['options', { name: 'string', attempts: 'number', retryDelayMs: 'number', retryJitter: 'fraction', topic: 'string', onExhausted: 'disposition' }]],
  applyOnce: [
    ['effect', 'effect'],
    ['options', { name: 'string', idRetentionMs: 'number' }],
  ],
  to: [
    ['topic', 'string'],
    ['options', { name: 'string', value: 'serde' }],
  ],
  respond: [
    ['topic', 'string'],
    ['options', { name: 'string', statusTopic: 'string' }],
  ],
  build: [],
};

const dslFunctions: Readonly<Record<string, (...args: never[]) => unknown>> = { stream, effect, json, string };

/** The DSL function names `describe` recognises. */
export const dslFunctionNames: ReadonlySet<string> = new Set(Object.keys(functionShapes));

/** A DSL operator of a builder being declared, e.g. `.keyedSerial` of a `stream(...)`. */
export class DslOperator {
  constructor(
    readonly builder: StreamBuilder<unknown>,
    readonly name: string,
  ) {}
}

/** A value that cannot be handed to the DSL (a whole options object known only at run time). */
export class NotStatic extends Error {
  constructor(
    message: string,
    readonly node: Node,
  ) {
    super(message);
  }
}

/** Calls the real DSL function `name` with `args` converted by their shapes. */
export function callDslFunction(name: string, args: readonly unknown[], call: Node, placeholders: Placeholders): unknown {
  const converted = convertArguments(name, functionShapes[name]!, args, call, placeholders);
  return (dslFunctions[name] as (...a: unknown[]) => unknown)(...converted);
}

/** Calls the real operator on its builder; an operator this version does not know is NotStatic. */
export function callDslOperator(operator: DslOperator, args: readonly unknown[], call: Node, placeholders: Placeholders): unknown {
  const shapes = operatorShapes[operator.name];
  if (!shapes) throw new NotStatic(`the operator '${operator.name}' is not one orderly describe knows`, call);
  const converted = convertArguments(operator.name, shapes, args, call, placeholders);
  const method = (operator.builder as unknown as Record<string, (...a: unknown[]) => unknown>)[operator.name]!;
  const options = converted[0] as { onExhausted?: unknown } | undefined;
  if (operator.name !== 'park' || !isToken(options?.onExhausted)) return method.apply(operator.builder, converted);
  // The DSL takes only the four dispositions: the chain is built with the default, and its park
  // node then carries the token, which the description shows as a marker.
  const built = method.apply(operator.builder, [{ ...options, onExhausted: undefined }]) as StreamBuilder<unknown>;
  return withLastNode(built, (node) => ({ ...node, onExhausted: options.onExhausted }) as ProcessorNode);
}

function isToken(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(UNKNOWN_TOKEN_PREFIX);
}

/** A copy of `builder` whose last node is replaced by `change(node)`. */
function withLastNode(builder: StreamBuilder<unknown>, change: (node: ProcessorNode) => ProcessorNode): StreamBuilder<unknown> {
  const { source, nodes } = builder as unknown as { source: SourceNode; nodes: readonly ProcessorNode[] };
  return new StreamBuilder(source, [...nodes.slice(0, -1), change(nodes.at(-1)!)]);
}

/** Whether `value` is a builder's operator. */
export function operatorOf(value: unknown, property: string): DslOperator | undefined {
  return value instanceof StreamBuilder ? new DslOperator(value, property) : undefined;
}

function convertArguments(operator: string, signature: Signature, args: readonly unknown[], call: Node, placeholders: Placeholders): unknown[] {
  return signature.map(([option, shape], i) => convert(args[i], shape, { operator, option, node: call }, placeholders));
}

interface Use {
  readonly operator: string;
  readonly option: string;
  readonly node: Node;
}

function convert(value: unknown, shape: Shape, use: Use, placeholders: Placeholders): unknown {
  if (value === undefined) return undefined;
  if (typeof shape === 'object') return convertOptions(value, shape, use, placeholders);
  switch (shape) {
    case 'string':
      if (value instanceof Unknown) return placeholders.token(value, use);
      if (typeof value === 'string') placeholders.noteUses(value, use);
      return value;
    case 'number':
      return value instanceof Unknown ? placeholders.sentinel(value, use) : value;
    case 'fraction':
      // Not printed by describe(): any number the DSL accepts will do.
      return value instanceof Unknown ? 0 : value;
    case 'disposition':
      // The DSL refuses any other string: see callDslOperator.
      return value instanceof Unknown ? placeholders.token(value, use) : value;
    case 'function':
      return value instanceof FunctionValue || value instanceof Unknown || typeof value === 'function' ? standIn : value;
    case 'schema':
      return standInSchema;
    case 'serde':
      return json();
    case 'effect':
      return convertEffect(value, use, placeholders);
  }
}

function convertOptions(value: unknown, shape: { readonly [option: string]: Shape }, use: Use, placeholders: Placeholders): unknown {
  if (value instanceof Unknown) {
    throw new NotStatic(`the options of ${use.operator} are known only at run time: ${value.origin.expression}`, value.origin.node);
  }
  if (typeof value !== 'object' || value === null) return value;
  const options: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [option, optionShape] of Object.entries(shape)) {
    const name = use.option === 'options' ? option : `${use.option}.${option}`; // limit.calls
    options[option] = convert(options[option], optionShape, { ...use, option: name }, placeholders);
  }
  return options;
}

function convertEffect(value: unknown, use: Use, placeholders: Placeholders): unknown {
  if (value instanceof Unknown) return standInEffect(placeholders.token(value, use), undefined);
  if (typeof value !== 'object' || value === null) return value;
  const { name, timeoutMs } = value as { name?: unknown; timeoutMs?: unknown };
  return standInEffect(convert(name, 'string', { ...use, option: 'effect name' }, placeholders), typeof timeoutMs === 'number' ? timeoutMs : undefined);
}

/**
 * An effect as effect() makes it (applyOnce takes nothing else), built directly so that a name known
 * only at run time (a placeholder) passes through to describe() as it is.
 */
function standInEffect(name: unknown, timeoutMs: number | undefined): unknown {
  return { name, apply: standIn, ...(timeoutMs === undefined ? {} : { timeoutMs }), [madeByEffect]: true };
}

// describe() runs none of a topology's functions; these stand in for them so the DSL's checks pass.
function standIn(): never {
  throw new Error('orderly describe: a stand-in for a function of the topology, never run');
}

const standInSchema = { '~standard': { version: 1, vendor: 'orderly-describe', validate: standIn } };
