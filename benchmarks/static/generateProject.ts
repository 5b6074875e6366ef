import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What a generated project holds, so that a run can check what describe and lint found. */
export interface GeneratedProject {
  readonly dir: string;
  readonly files: number;
  readonly topologies: number;
  /** Decide functions that reach process.exit three calls down: each is one lint finding. */
  readonly violations: number;
}

const FILES_PER_GROUP = 5;

/**
 * Writes a TypeScript project of `files` files (rounded down to groups of five) into `dir`, for
 * timing `orderly describe` and `orderly lint`: each group has topics, options, a model with three
 * levels of helpers, a helper returning half a chain, and a topology built from them; every tenth
 * group's model calls process.exit at the third level.
 */
export function generateProject(dir: string, files: number, orderlySrc: string): GeneratedProject {
  mkdirSync(dir, { recursive: true });
  const orderly = relative(dir, join(orderlySrc, 'index.js')).split('\\').join('/');
  const groups = Math.floor(files / FILES_PER_GROUP);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: true },
      include: ['*.ts'],
    }),
  );
  let violations = 0;
  for (let k = 0; k < groups; k++) {
    const exits = k % 10 === 0;
    if (exits) violations++;
    const write = (name: string, text: string) => writeFileSync(join(dir, `${name}${k}.ts`), text);
    write('topics', `export const TOPIC_${k} = 'orders-${k}';\nexport const OUT_${k} = \`\${TOPIC_${k}}-decisions\`;\n`);
    write(
      'options',
      `export const serial${k} = { maxInFlight: ${(k % 8) + 1} };\nexport const park${k} = { attempts: 3, retryDelayMs: ${k} * 100, topic: 'held-${k}' };\nexport const limit${k} = { calls: ${10 + k}, windowMs: 60_000 };\n`,
    );
    write('model', modelFile(k, exits, orderly));
    write('helpers', helpersFile(k, orderly, k > 0 ? k - 1 : 0));
    write(
      'topology',
      `import { TOPIC_${k}, OUT_${k} } from './topics${k}.js';\nimport { park${k} } from './options${k}.js';\nimport { chain${k}, effect${k} } from './helpers${k}.js';\n\nexport const topology${k} = chain${k}(TOPIC_${k}).park(park${k}).applyOnce(effect${k}).to(OUT_${k}).build();\n`,
    );
  }
  return { dir, files: groups * FILES_PER_GROUP, topologies: groups, violations };
}

function modelFile(k: number, exits: boolean, orderly: string): string {
  return `import { RateLimited, type DecideContext } from '${orderly}';

export interface Event${k} {
  readonly id: string;
  readonly amount: number;
}

function levelThree${k}(body: string): string {
  ${exits ? 'if (body.length === 0) process.exit(1);\n  ' : ''}return body.trim();
}

function levelTwo${k}(event: Event${k}): string {
  return levelThree${k}(JSON.stringify(event));
}

async function levelOne${k}(event: Event${k}, signal: AbortSignal): Promise<unknown> {
  const response = await fetch('https://models.example.com/v1/chat/completions', { method: 'POST', signal, body: levelTwo${k}(event) });
  if (response.status === 429) throw new RateLimited(1_000);
  return response.json();
}

export async function decide${k}(event: Event${k}, ctx: DecideContext): Promise<unknown> {
  return levelOne${k}(event, ctx.signal);
}
`;
}

function helpersFile(k: number, orderly: string, previous: number): string {
  return `import { effect, stream } from '${orderly}';
import { decide${k}, type Event${k} } from './model${k}.js';
import { limit${k}, serial${k} } from './options${k}.js';
import { limit${previous} } from './options${previous}.js';

export function chain${k}(topic: string) {
  return stream<Event${k}>(topic).keyedSerial(serial${k}).agentStep('decide-${k}', decide${k}, { limit: ${k % 2 === 0 ? `limit${k}` : `limit${previous}`} });
}

export const effect${k} = effect('effects-${k}', ({ event, decision }: { event: Event${k}; decision: unknown }, { state }) => {
  state.put(event.id, decision);
  return { id: event.id, decision };
});
`;
}
