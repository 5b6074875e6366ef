import { Node, SyntaxKind, type Expression, type Symbol as MorphSymbol } from 'ts-morph';
import { callDslFunction, callDslOperator, DslOperator, operatorOf } from './dslCalls.js';
import type { Evaluation } from './evaluation.js';
import { invokeFunction } from './invoke.js';
import type { Placeholders } from './placeholders.js';
import { envRead, platformGlobal, primitiveMethod, processProperty, ProcessValue } from './platform.js';
import { evaluateBinary, evaluatePrefix } from './operators.js';
import { DslFunction, EnvValue, firstUnknown, FunctionValue, NativeValue, Scope, Unknown } from './values.js';

/** Tells which declarations are orderly's DSL functions, and which files belong to the project. */
export interface ProjectView {
  /** The DSL function a declaration is (`stream`, `effect`, `json`, `string`), if it is one. */
  dslFunctionOf(declaration: Node): string | undefined;
  /** Whether the evaluator may read a declaration's code (the project's own files, not libraries). */
  isProjectCode(declaration: Node): boolean;
}

/**
 * Evaluates the expressions of a topology's declaration without running the program: literals,
 * constants, object literals, imports and the project's own functions, down to the DSL calls,
 * which it makes for real. What it cannot know (the environment, a library's value, a parameter
 * nobody passes) becomes an {@link Unknown} that remembers the expression it came from.
 */
export class Evaluator implements Evaluation {
  readonly moduleScope = new Scope(undefined, undefined);
  private readonly evaluating = new Set<Node>();
  /** The `.build()` calls this evaluator has made, so that a caller can tell which chain a Topology comes from. */
  readonly builds: Node[] = [];
  depth = 0;

  constructor(
    readonly placeholders: Placeholders,
    readonly project: ProjectView,
  ) {}

  evaluate(node: Expression, scope: Scope): unknown {
    if (
      Node.isParenthesizedExpression(node) ||
      Node.isAsExpression(node) ||
      Node.isSatisfiesExpression(node) ||
      Node.isNonNullExpression(node) ||
      Node.isTypeAssertion(node)
    ) {
      return this.evaluate(node.getExpression(), scope);
    }
    if (Node.isNumericLiteral(node) || Node.isStringLiteral(node) || Node.isNoSubstitutionTemplateLiteral(node)) return node.getLiteralValue();
    if (node.getKind() === SyntaxKind.TrueKeyword) return true;
    if (node.getKind() === SyntaxKind.FalseKeyword) return false;
    if (node.getKind() === SyntaxKind.NullKeyword) return null;
    if (Node.isTemplateExpression(node)) return this.template(node, scope);
    if (Node.isIdentifier(node)) return this.identifier(node, scope);
    if (Node.isPropertyAccessExpression(node)) return this.member(node, this.evaluate(node.getExpression(), scope), node.getName(), node.hasQuestionDotToken());
    if (Node.isElementAccessExpression(node)) {
      const key = this.evaluate(node.getArgumentExpressionOrThrow(), scope);
      return this.member(node, this.evaluate(node.getExpression(), scope), key, node.hasQuestionDotToken());
    }
    if (Node.isCallExpression(node)) return this.call(node, scope);
    if (Node.isObjectLiteralExpression(node)) return this.object(node, scope);
    if (Node.isArrayLiteralExpression(node)) return this.array(node, scope);
    if (Node.isArrowFunction(node) || Node.isFunctionExpression(node)) return new FunctionValue(node, scope);
    if (Node.isBinaryExpression(node)) return evaluateBinary(this, node, scope);
    if (Node.isPrefixUnaryExpression(node)) return evaluatePrefix(this, node, scope);
    if (Node.isConditionalExpression(node)) {
      const condition = this.known(this.evaluate(node.getCondition(), scope));
      if (condition instanceof Unknown) return condition;
      return this.evaluate(condition ? node.getWhenTrue() : node.getWhenFalse(), scope);
    }
    if (Node.isTypeOfExpression(node)) {
      const value = this.known(this.evaluate(node.getExpression(), scope));
      return value instanceof Unknown ? value : typeof value;
    }
    return this.unknown(node, 'an expression orderly describe does not evaluate');
  }

  /** `value`, or the Unknown it stands for when it is a string holding a placeholder token. */
  known(value: unknown): unknown {
    if (typeof value === 'string') return this.placeholders.unknownIn(value) ?? value;
    return value;
  }

  unknown(node: Node, reason: string): Unknown {
    return new Unknown({ expression: node.getText(), node, reason });
  }

  /** A value as a string part: a placeholder token when unknown. */
  stringPart(value: unknown): string {
    return value instanceof Unknown ? this.placeholders.token(value) : String(value);
  }

  private template(node: Node & { getHead(): Node; getTemplateSpans(): Node[] }, scope: Scope): unknown {
    let text = (node.getHead() as unknown as { getLiteralText(): string }).getLiteralText();
    for (const span of node.getTemplateSpans() as unknown as Array<{ getExpression(): Expression; getLiteral(): { getLiteralText(): string } }>) {
      const value = this.evaluate(span.getExpression(), scope);
      if (value !== null && typeof value === 'object' && !(value instanceof Unknown)) return this.unknown(span.getExpression(), 'an object in a template');
      text += this.stringPart(value) + span.getLiteral().getLiteralText();
    }
    return text;
  }

  private identifier(node: Node, scope: Scope): unknown {
    if (node.getText() === 'undefined') return undefined;
    const symbol = node.getSymbol();
    if (!symbol) return platformGlobal(node.getText(), node);
    return this.symbolValue(symbol, node, scope);
  }

  /** The value of what `symbol` names, as seen from `scope`. */
  symbolValue(symbol: MorphSymbol, node: Node, scope: Scope): unknown {
    const target = symbol.isAlias() ? (symbol.getAliasedSymbol() ?? symbol) : symbol;
    const declaration = target.getValueDeclaration() ?? target.getDeclarations()[0];
    if (!declaration) return this.unknown(node, `'${node.getText()}', declared outside the project`);
    const dsl = this.project.dslFunctionOf(declaration);
    if (dsl) return new DslFunction(dsl);
    if (!this.project.isProjectCode(declaration)) {
      return !symbol.isAlias() && declaration.getSourceFile().isDeclarationFile()
        ? platformGlobal(node.getText(), node)
        : this.unknown(node, `'${node.getText()}', from outside the project`);
    }
    return this.declarationValue(declaration, node, scope);
  }

  private declarationValue(declaration: Node, node: Node, scope: Scope): unknown {
    const bound = scope.lookup(declaration);
    if (bound.found) return bound.value;
    if (Node.isFunctionDeclaration(declaration)) return new FunctionValue(declaration, scope.scopeOf(declaration) ?? this.moduleScope);
    if (Node.isParameterDeclaration(declaration)) {
      const fn = declaration.getParentOrThrow();
      const name = Node.hasName(fn) ? fn.getName() : 'a function';
      return this.unknown(declaration, `parameter '${declaration.getName()}' of ${name}, known only when it is called`);
    }
    if (Node.isVariableDeclaration(declaration) || Node.isBindingElement(declaration)) return this.variable(declaration, node, scope);
    if (Node.isEnumMember(declaration)) return declaration.getValue() ?? this.unknown(node, 'an enum member without a constant value');
    return this.unknown(node, `'${node.getText()}', a ${declaration.getKindName()} orderly describe does not evaluate`);
  }

  /** A variable's value from its initializer, once per scope; locals of a scope not being run are bound lazily. */
  private variable(declaration: Node, node: Node, scope: Scope): unknown {
    const home = scope.scopeOf(declaration) ?? this.moduleScope;
    const bound = home.lookup(declaration);
    if (bound.found) return bound.value;
    if (this.evaluating.has(declaration)) return this.unknown(node, `'${node.getText()}' refers to itself`);
    this.evaluating.add(declaration);
    try {
      const value = Node.isBindingElement(declaration) ? this.bindingValue(declaration, home) : this.initializerValue(declaration, home);
      home.set(declaration, value);
      return value;
    } finally {
      this.evaluating.delete(declaration);
    }
  }

  private initializerValue(declaration: Node, scope: Scope): unknown {
    const initializer = (declaration as unknown as { getInitializer(): Expression | undefined }).getInitializer();
    return initializer ? this.evaluate(initializer, scope) : undefined;
  }

  private bindingValue(element: Node, scope: Scope): unknown {
    if (!Node.isBindingElement(element)) return undefined;
    const pattern = element.getParentOrThrow();
    const owner = pattern.getParentOrThrow();
    if (!Node.isObjectBindingPattern(pattern) || !Node.isVariableDeclaration(owner))
      return this.unknown(element, 'a destructuring orderly describe does not follow');
    const source = this.initializerValue(owner, scope);
    const key = element.getPropertyNameNode()?.getText() ?? element.getName();
    const value = this.member(element, source, key, false);
    const fallback = element.getInitializer();
    return value === undefined && fallback ? this.evaluate(fallback, scope) : value;
  }

  /** `object[key]`. */
  member(node: Node, object: unknown, key: unknown, optional: boolean): unknown {
    const knownKey = this.known(key);
    // A property of an unknown object is a value of its own: `topics.source` and `topics.output` must not stand for the same one.
    if (object instanceof Unknown) return knownKey instanceof Unknown ? object : object.property(String(knownKey), node);
    if (knownKey instanceof Unknown) return object instanceof EnvValue ? envRead(undefined, node) : knownKey;
    const property = String(knownKey);
    if (object instanceof EnvValue) return envRead(property, node);
    if (object instanceof ProcessValue) return processProperty(property, node);
    if (object === undefined || object === null) return optional ? undefined : this.unknown(node, `reads '${property}' of ${String(object)}`);
    const operator = operatorOf(object, property);
    if (operator) return operator;
    if (object instanceof NativeValue)
      return (object as NativeValue & { statics?: Record<string, unknown> }).statics?.[property] ?? this.unknown(node, `'${node.getText()}'`);
    if (typeof object === 'string' && this.placeholders.unknownIn(object)) return this.placeholders.unknownIn(object);
    const method = primitiveMethod(object, property);
    if (method) return method;
    if (typeof object === 'string' || Array.isArray(object))
      return property === 'length' || /^\d+$/.test(property)
        ? (object as unknown as Record<string, unknown>)[property]
        : this.unknown(node, `'${node.getText()}'`);
    if (typeof object === 'object' && Object.getPrototypeOf(object) === Object.prototype) {
      return Object.hasOwn(object, property) ? (object as Record<string, unknown>)[property] : undefined;
    }
    return this.unknown(node, `'${node.getText()}'`);
  }

  private call(node: Node & { getExpression(): Expression; getArguments(): Node[] }, scope: Scope): unknown {
    const callee = this.evaluate(node.getExpression(), scope);
    if (callee === undefined && (node as unknown as { hasQuestionDotToken(): boolean }).hasQuestionDotToken()) return undefined;
    const args = this.callArguments(node.getArguments(), scope);
    if (args instanceof Unknown) return args;
    // A chained call starts where the chain starts: its operator's name marks where it is.
    const expression = node.getExpression();
    const where = Node.isPropertyAccessExpression(expression) ? expression.getNameNode() : node;
    if (callee instanceof DslFunction) return callDslFunction(callee.name, args, where, this.placeholders);
    if (callee instanceof DslOperator) {
      if (callee.name === 'build') this.builds.push(node);
      return callDslOperator(callee, args, where, this.placeholders);
    }
    if (callee instanceof FunctionValue) return invokeFunction(this, callee, args, node);
    if (callee instanceof NativeValue) return this.native(callee, args, node);
    // A method of an unknown object (a chain built on one) gives a value as unknown as the object: name the object.
    if (callee instanceof Unknown) return callee.object ?? callee;
    return this.unknown(node, 'a call orderly describe does not follow');
  }

  private callArguments(nodes: Node[], scope: Scope): unknown[] | Unknown {
    const args: unknown[] = [];
    for (const arg of nodes) {
      if (Node.isSpreadElement(arg)) {
        const spread = this.evaluate(arg.getExpression(), scope);
        if (!Array.isArray(spread)) return spread instanceof Unknown ? spread : this.unknown(arg, 'a spread of something not an array');
        args.push(...spread);
      } else {
        args.push(this.evaluate(arg as Expression, scope));
      }
    }
    return args;
  }

  private native(callee: NativeValue, args: unknown[], node: Node): unknown {
    const unknown = firstUnknown(args.map((a) => this.known(a)));
    if (unknown) return unknown;
    try {
      return callee.call(args);
    } catch (error) {
      return this.unknown(node, `${callee.name} throws: ${(error as Error).message}`);
    }
  }

  private object(node: Node & { getProperties(): Node[] }, scope: Scope): unknown {
    const object: Record<string, unknown> = {};
    for (const property of node.getProperties()) {
      if (Node.isSpreadAssignment(property)) {
        const spread = this.evaluate(property.getExpression(), scope);
        if (spread instanceof Unknown) return spread;
        if (spread !== null && typeof spread === 'object') Object.assign(object, spread);
      } else if (Node.isPropertyAssignment(property)) {
        const name = this.propertyName(property.getNameNode(), scope);
        if (name instanceof Unknown) return name;
        object[name] = this.evaluate(property.getInitializerOrThrow(), scope);
      } else if (Node.isShorthandPropertyAssignment(property)) {
        const symbol = property.getValueSymbol();
        object[property.getName()] = symbol ? this.symbolValue(symbol, property.getNameNode(), scope) : this.unknown(property, 'an unresolved name');
      } else if (Node.isMethodDeclaration(property)) {
        object[property.getName()] = new FunctionValue(property, scope);
      } else {
        return this.unknown(property, 'an accessor in an object literal');
      }
    }
    return object;
  }

  private propertyName(name: Node, scope: Scope): string | Unknown {
    if (Node.isComputedPropertyName(name)) {
      const key = this.known(this.evaluate(name.getExpression(), scope));
      return key instanceof Unknown ? key : String(key);
    }
    if (Node.isStringLiteral(name) || Node.isNumericLiteral(name)) return String(name.getLiteralValue());
    return name.getText();
  }

  private array(node: Node & { getElements(): Node[] }, scope: Scope): unknown {
    const values = this.callArguments(node.getElements(), scope);
    return values;
  }
}
