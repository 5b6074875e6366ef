import { describeProject, type StaticTopology } from '../static/describeProject.js';
import { openProject } from './openProject.js';

export interface DescribeOptions {
  json?: boolean;
  mermaid?: boolean;
}

/**
 * `orderly describe [FILES | DIRS | tsconfig.json...] [--json] [--mermaid]`: prints every topology
 * declared in the project as `Topology.describe()` (or `toMermaid()`) prints it at run time, read
 * from the code without running it. Returns the exit code: 0, 1 when a topology could not be read
 * or none was found, 2 on a usage error.
 */
export async function describeCommand(inputs: readonly string[], options: DescribeOptions): Promise<number> {
  const opened = openProject('describe', inputs);
  if (!opened) return 2;
  const topologies = describeProject(opened.loaded, opened.cwd);
  if (options.json) {
    const rows = topologies.map(({ mermaid, ...row }) => (options.mermaid ? { ...row, mermaid } : row));
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  } else {
    process.stdout.write(topologies.map((t) => formatTopology(t, options.mermaid === true)).join('\n'));
  }
  if (topologies.length === 0) {
    const named = inputs.length > 0 ? inputs.join(', ') : 'tsconfig.json';
    process.stderr.write(
      `orderly describe: no topology found in ${named}: looked for a chain of stream(...) ending in .build() in these files, and for the topology their default export evaluates to; ` +
        'name the file or directory that holds the stream(...)...build() chain, or the module whose default export builds it\n',
    );
    return 1;
  }
  return topologies.some((t) => t.error !== undefined) ? 1 : 0;
}

function formatTopology(topology: StaticTopology, mermaid: boolean): string {
  const comment = mermaid ? '%% ' : '# ';
  const lines = [`${comment}${topology.file}:${topology.line} ${topology.name}`];
  const unknowns = topology.unknowns.map((u) => {
    const uses = u.uses.map((use) => `${use.operator} ${use.option} at ${use.file}:${use.line}`).join(', ');
    return `${comment}${u.marker} = ${u.expression} (${u.file}:${u.line}): ${u.reason}${uses ? `; given to ${uses}` : ''}`;
  });
  const known = unknowns.length ? [`${comment}known only at run time:`, ...unknowns] : [];
  if (topology.error !== undefined) return `${[...lines, `${comment}cannot be read: ${topology.error}`, ...known].join('\n')}\n`;
  const body = (mermaid ? topology.mermaid : topology.description) ?? '';
  return `${[...lines, ...known].join('\n')}\n${body}`;
}
