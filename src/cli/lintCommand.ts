import { lintProject, type Finding } from '../lint/lintProject.js';
import { loadProject, UsageError } from '../static/project.js';

export interface LintOptions {
  json?: boolean;
}

/**
 * `orderly lint [FILES | DIRS | tsconfig.json...] [--json]`: checks every agent step's decide
 * function and every effect through its call graph inside the project (docs/lint.md). Returns the
 * exit code: 0 without findings, 1 with findings, 2 on a usage error.
 */
export async function lintCommand(inputs: readonly string[], options: LintOptions): Promise<number> {
  const cwd = process.cwd();
  let findings: Finding[];
  try {
    findings = lintProject(loadProject(inputs, cwd), cwd);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`orderly lint: ${error.message}\n`);
    return 2;
  }
  if (options.json) process.stdout.write(`${JSON.stringify(findings, null, 2)}\n`);
  else process.stdout.write(findings.map(formatFinding).join(''));
  return findings.length > 0 ? 1 : 0;
}

function formatFinding(finding: Finding): string {
  const chain = finding.chain.map((link) => `${link.name} (${link.file}:${link.line})`).join(' -> ');
  return `${finding.file}:${finding.line} ${finding.rule} ${finding.message}\n  from ${finding.from}: ${chain}\n`;
}
