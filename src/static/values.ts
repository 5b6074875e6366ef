import type { Node } from 'ts-morph';

/** Where a value that cannot be known statically comes from: the expression that first made it unknown. */
export interface UnknownOrigin {
  /** The expression's source text. */
  readonly expression: string;
  readonly node: Node;
  /** Why it cannot be known, e.g. `environment variable ORDERLY_TOPIC_PREFIX`. */
  readonly reason: string;
  /** The environment variable it reads, when it reads one whose name is known. */
  readonly env?: string;
  /** The property path read from the unknown value at `base` (`.source`), when this is a part of one. */
  readonly path?: string;
  /** The expression whose value this is a property of, when `path` is set. */
  readonly base?: Node;
}

/**
 * A value known only at run time. Operations on it give another Unknown with the same origin; a
 * property read from it is an Unknown of its own ({@link Unknown.property}).
 */
export class Unknown {
  constructor(
    readonly origin: UnknownOrigin,
    /** The unknown object this is a property of, if it is one. */
    readonly object?: Unknown,
  ) {}

  /** `this[name]`, read at `node`: the same value wherever it is read, another than any other property's. */
  property(name: string, node: Node): Unknown {
    const { reason, env, path = '', base = this.origin.node } = this.origin;
    return new Unknown({ expression: node.getText(), node, reason, ...(env === undefined ? {} : { env }), path: `${path}.${name}`, base }, this);
  }

  /** What tells two unknown values apart: the expression first unknown, the variable it reads, the property path. */
  get identity(): string {
    const { node, env, path, base = node } = this.origin;
    return `${base.getSourceFile().getFilePath()}:${base.getStart()}:${env ?? ''}:${path ?? ''}`;
  }
}

/** A function of the project, with the scope it was declared in. */
export class FunctionValue {
  constructor(
    readonly node: Node,
    readonly scope: Scope,
  ) {}
}

/** `process.env`: every read of it is an Unknown naming the variable. */
export class EnvValue {}

/** A function or method of the platform that the evaluator runs on known arguments (Math.max, String#trim). */
export class NativeValue {
  constructor(
    readonly name: string,
    readonly call: (args: unknown[]) => unknown,
  ) {}
}

/** One of orderly's DSL functions (`stream`, `effect`, `json`, `string`), recognised by its declaration. */
export class DslFunction {
  constructor(readonly name: string) {}
}

/** The bindings of one function call (its parameters and locals), chained to the enclosing scope. */
export class Scope {
  private readonly values = new Map<Node, unknown>();

  constructor(
    readonly parent: Scope | undefined,
    /** The function whose call this scope is, if any. */
    readonly owner: Node | undefined,
  ) {}

  set(declaration: Node, value: unknown): void {
    this.values.set(declaration, value);
  }

  /** The scope that binds `declaration`, or the nearest scope whose function declares it (bound lazily). */
  lookup(declaration: Node): { found: true; value: unknown } | { found: false } {
    if (this.values.has(declaration)) return { found: true, value: this.values.get(declaration) };
    return this.parent ? this.parent.lookup(declaration) : { found: false };
  }

  /** The innermost scope whose function contains `node`. */
  scopeOf(node: Node): Scope | undefined {
    if (this.owner && (this.owner === node || isInside(node, this.owner))) return this;
    return this.parent?.scopeOf(node);
  }
}

function isInside(node: Node, ancestor: Node): boolean {
  return node.getPos() >= ancestor.getPos() && node.getEnd() <= ancestor.getEnd() && node.getSourceFile() === ancestor.getSourceFile();
}

/** The first Unknown among `values`, so that a result made of unknowns keeps the origin of the first. */
export function firstUnknown(values: readonly unknown[]): Unknown | undefined {
  return values.find((v): v is Unknown => v instanceof Unknown);
}
