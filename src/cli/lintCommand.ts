import { lintProject, type Finding } from '../lint/lintProject.js';
import { openProject } from './openProject.js';

export interface LintOptions {
  json?: boolean;
}

/**
 * `orderly lint [FILES | DIRS | tsconfig.json...] [--json]`: checks every agent step's decide
 * function and every effect through its call graph inside the project (docs/lint.md). Returns the
 * exit code: 0 without findings, 1 with findings, 2 on a usage error.
 */
export async function lintCommand(inputs: readonly string[], options: LintOptions): Promise<number> {
  const opened = openProject('lint', inputs);
  if (!opened) return 2;
  const { findings, checked } = lintProject(opened.loaded, opened.cwd);
  if (options.json) process.stdout.write(`${JSON.stringify(findings, null, 2)}\n`);
  else process.stdout.write(findings.map(formatFinding).join(''));
  // What was checked, on stderr: stdout stays the findings alone, for scripts.
  const count = findings.length === 0 ? 'no findings' : findings.length === 1 ? '1 finding' : `${findings.length} findings`;
  const none = checked.length === 0 ? ': none found, is this the project that declares the topology?' : '';
  process.stderr.write(`orderly lint: ${count}; ${checked.length} checked (decide functions and effects)${none}\n`);
  return findings.length > 0 ? 1 : 0;
}

function formatFinding(finding: Finding): string {
  const chain = finding.chain.map((link) => `${link.name} (${link.file}:${link.line})`).join(' -> ');
  return `${finding.file}:${finding.line} ${finding.rule} ${finding.message}\n  from ${finding.from}: ${chain}\n`;
}
