import type { Expression, Node } from 'ts-morph';
import type { Scope, Unknown } from './values.js';

/**
 * What the evaluator's helpers (operators, calls of the project's functions) call back into: the
 * {@link Evaluator}'s side of them, as an interface so that they do not import it back.
 */
export interface Evaluation {
  /** Calls of the project's functions nested now. */
  depth: number;
  evaluate(node: Expression, scope: Scope): unknown;
  known(value: unknown): unknown;
  unknown(node: Node, reason: string): Unknown;
  stringPart(value: unknown): string;
  member(node: Node, object: unknown, key: unknown, optional: boolean): unknown;
}
