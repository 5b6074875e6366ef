import { SyntaxKind, type BinaryExpression, type PrefixUnaryExpression } from 'ts-morph';
import type { Evaluation } from './evaluation.js';
import { Unknown, type Scope } from './values.js';

/** A binary expression: `??`, `||` and `&&` short-circuit; `+` keeps an unknown part of a string. */
export function evaluateBinary(evaluator: Evaluation, node: BinaryExpression, scope: Scope): unknown {
  const operator = node.getOperatorToken().getKind();
  const left = evaluator.evaluate(node.getLeft(), scope);
  if (operator === SyntaxKind.QuestionQuestionToken) {
    if (left instanceof Unknown) return left;
    return left === undefined || left === null ? evaluator.evaluate(node.getRight(), scope) : left;
  }
  if (operator === SyntaxKind.BarBarToken || operator === SyntaxKind.AmpersandAmpersandToken) {
    const known = evaluator.known(left);
    if (known instanceof Unknown) return known;
    const takeLeft = operator === SyntaxKind.BarBarToken ? Boolean(known) : !known;
    return takeLeft ? left : evaluator.evaluate(node.getRight(), scope);
  }
  const right = evaluator.evaluate(node.getRight(), scope);
  if (operator === SyntaxKind.PlusToken && (typeof left === 'string' || typeof right === 'string')) {
    return evaluator.stringPart(left) + evaluator.stringPart(right);
  }
  const a = evaluator.known(left);
  const b = evaluator.known(right);
  if (a instanceof Unknown) return a;
  if (b instanceof Unknown) return b;
  const apply = arithmetic[operator];
  return apply ? apply(a as never, b as never) : evaluator.unknown(node, 'an operator orderly describe does not evaluate');
}

const arithmetic: Partial<Record<SyntaxKind, (a: never, b: never) => unknown>> = {
  [SyntaxKind.PlusToken]: (a: number, b: number) => a + b,
  [SyntaxKind.MinusToken]: (a: number, b: number) => a - b,
  [SyntaxKind.AsteriskToken]: (a: number, b: number) => a * b,
  [SyntaxKind.SlashToken]: (a: number, b: number) => a / b,
  [SyntaxKind.PercentToken]: (a: number, b: number) => a % b,
  [SyntaxKind.AsteriskAsteriskToken]: (a: number, b: number) => a ** b,
  [SyntaxKind.LessThanToken]: (a: number, b: number) => a < b,
  [SyntaxKind.LessThanEqualsToken]: (a: number, b: number) => a <= b,
  [SyntaxKind.GreaterThanToken]: (a: number, b: number) => a > b,
  [SyntaxKind.GreaterThanEqualsToken]: (a: number, b: number) => a >= b,
  [SyntaxKind.EqualsEqualsEqualsToken]: (a: unknown, b: unknown) => a === b,
  [SyntaxKind.ExclamationEqualsEqualsToken]: (a: unknown, b: unknown) => a !== b,
  // eslint-disable-next-line eqeqeq
  [SyntaxKind.EqualsEqualsToken]: (a: unknown, b: unknown) => a == b,
  // eslint-disable-next-line eqeqeq
  [SyntaxKind.ExclamationEqualsToken]: (a: unknown, b: unknown) => a != b,
};

/** `!x`, `-x`, `+x`. */
export function evaluatePrefix(evaluator: Evaluation, node: PrefixUnaryExpression, scope: Scope): unknown {
  const value = evaluator.known(evaluator.evaluate(node.getOperand(), scope));
  if (value instanceof Unknown) return value;
  switch (node.getOperatorToken()) {
    case SyntaxKind.ExclamationToken:
      return !value;
    case SyntaxKind.MinusToken:
      return -(value as number);
    case SyntaxKind.PlusToken:
      return +(value as number);
    default:
      return evaluator.unknown(node, 'an operator orderly describe does not evaluate');
  }
}
