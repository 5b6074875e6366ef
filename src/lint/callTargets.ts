import { Node, type CallExpression, type NewExpression } from 'ts-morph';
import { packageOf } from '../static/packageOf.js';
import type { RuleId } from './rules.js';

/** Packages whose every API is a Kafka client. */
const kafkaPackages = new Set(['@confluentinc/kafka-javascript', 'kafkajs', 'node-rdkafka', '@platformatic/kafka']);
/** State stores: LevelDB and its kin. */
const storePackages = new Set(['level', 'classic-level', 'memory-level', 'abstract-level', 'browser-level', 'leveldown', 'levelup', 'rocksdb']);
/** Model providers' SDKs: any call into them is a model call. */
const modelPackages = new Set([
  'openai',
  '@anthropic-ai/sdk',
  '@google/generative-ai',
  '@google/genai',
  '@mistralai/mistralai',
  'cohere-ai',
  'groq-sdk',
  'ollama',
  'ai',
  '@aws-sdk/client-bedrock-runtime',
  '@azure/openai',
  'together-ai',
  'replicate',
]);
/** Methods that commit offsets or produce records. */
const commitOrProduce = new Set([
  'commit',
  'commitOffsets',
  'commitOffsetsIfNecessary',
  'commitSync',
  'commitAsync',
  'sendOffsets',
  'produce',
  'send',
  'sendBatch',
  'flush',
]);
/** Paths of model HTTP APIs (OpenAI-compatible, Anthropic, Gemini, Ollama). */
const modelUrl = /\/chat\/completions|\/v1\/completions|\/v1\/messages|\/v1\/responses|:generateContent|:streamGenerateContent|\/api\/generate|\/api\/chat\b/;

/** What a call reaches, as far as the rules care. */
export interface Reached {
  readonly rule: RuleId;
  /** What it is, e.g. `Producer.send (@confluentinc/kafka-javascript)`. */
  readonly what: string;
}

/** The declaration a call or `new` reaches, following imports. */
export function calleeDeclaration(call: CallExpression | NewExpression): Node | undefined {
  const callee = call.getExpression();
  const named = Node.isPropertyAccessExpression(callee) ? callee.getNameNode() : callee;
  let symbol = named.getSymbol();
  if (symbol?.isAlias()) symbol = symbol.getAliasedSymbol() ?? symbol;
  return symbol?.getValueDeclaration() ?? symbol?.getDeclarations()[0];
}

/** What a call from a decide function reaches that the decide rules forbid, if anything. */
export function forbiddenForDecide(call: CallExpression | NewExpression, declaration: Node | undefined): Reached | undefined {
  const name = calleeName(call);
  if (isProcessExit(call)) return { rule: 'decide-no-process-exit', what: name };
  const place = declaration && packageOf(declaration.getSourceFile().getFilePath());
  if (!place) return undefined;
  const orderly = place.name === 'orderly';
  const kafka = kafkaPackages.has(place.name) || (orderly && /^(dist\/)?src\/kafka\//.test(place.path));
  const logPort = orderly && /^(dist\/)?src\/ports\/log\.(d\.)?ts$/.test(place.path);
  if ((kafka || logPort) && Node.isCallExpression(call) && commitOrProduce.has(methodName(call) ?? '')) {
    return { rule: 'decide-no-commit-or-produce', what: `${name} (${place.name})` };
  }
  if (kafka) return { rule: 'decide-no-kafka-client', what: `${name} (${place.name})` };
  if (storePackages.has(place.name) || (orderly && /^(dist\/)?src\/(state\/|ports\/store\.)/.test(place.path))) {
    return { rule: 'decide-no-state-store', what: `${name} (${place.name})` };
  }
  return undefined;
}

/** Whether a call from an effect is a model call: a provider SDK, or HTTP to a model API's path. */
export function modelCall(call: CallExpression | NewExpression, declaration: Node | undefined): Reached | undefined {
  const place = declaration && packageOf(declaration.getSourceFile().getFilePath());
  if (place && modelPackages.has(place.name)) return { rule: 'effect-no-model-call', what: `${calleeName(call)} (${place.name})` };
  // orderly's provider adapters: each xDecide makes a decide function, a model call.
  if (place?.name === 'orderly' && /^(dist\/)?src\/providers\//.test(place.path) && /Decide$/.test(calleeName(call)))
    return { rule: 'effect-no-model-call', what: `${calleeName(call)} (orderly/providers)` };
  const url = call.getArguments()[0];
  if (url && (Node.isStringLiteral(url) || Node.isNoSubstitutionTemplateLiteral(url) || Node.isTemplateExpression(url)) && modelUrl.test(url.getText())) {
    return { rule: 'effect-no-model-call', what: `${calleeName(call)} to ${url.getText()}` };
  }
  return undefined;
}

function isProcessExit(call: CallExpression | NewExpression): boolean {
  const callee = call.getExpression();
  if (!Node.isPropertyAccessExpression(callee) || !['exit', 'abort', 'reallyExit'].includes(callee.getName())) return false;
  const object = callee.getExpression();
  return (
    Node.isIdentifier(object) &&
    object.getText() === 'process' &&
    (object.getSymbol()?.getDeclarations() ?? []).every((d) => d.getSourceFile().isDeclarationFile())
  );
}

function methodName(call: CallExpression): string | undefined {
  const callee = call.getExpression();
  return Node.isPropertyAccessExpression(callee) ? callee.getName() : undefined;
}

/** The callee as written, without arguments: `producer.send`, `new Level`. */
export function calleeName(call: CallExpression | NewExpression): string {
  const text = call.getExpression().getText().replace(/\s+/g, '');
  return Node.isNewExpression(call) ? `new ${text}` : text;
}
