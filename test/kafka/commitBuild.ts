// A build of an earlier commit of this repository, made at test time from the clone's git
// history, for the tests that run workers of the old code beside workers of this code (the
// rolling upgrade). What `npm run build` compiles (tsconfig.build.json: src, testkit, examples),
// the CLI's launcher and package.json are taken out of the commit with `git archive`; the tree
// uses this checkout's node_modules through a symlink (today's dependency versions: the old code
// must run on them, which the test shows). esbuild turns each TypeScript file into the JavaScript
// file `npm run build` would put at the same place in dist/ (ESM, ES2022, the commit's tsconfig),
// without tsc's type check (the commit passed its own) and declarations (nothing imports the
// build's types): about 2 s, where tsc takes 15 s of CPU. The build is kept in
// .cache/builds/<commit>, so the next run reuses it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO } from './worker.js';

/** The parts of a commit that its `bin/orderly run` needs. */
const SOURCES = ['src', 'testkit', 'examples', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
/** How the build is made; a build made another way is made again. */
const RECIPE = `esbuild of src (but src/lab/page), testkit, examples to dist/, esm, es2022, source maps; sources: ${SOURCES.join(' ')}`;
/** Written last into a finished build: its commit and recipe. */
const MARK = '.orderly-build.json';

/**
 * The directory of a build of `commit` (any name git resolves: a short or full hash, a tag),
 * with `bin/orderly` and `dist/` as `npm run build` makes them: give it to `Worker` as `root`.
 * Builds it the first time (a few seconds), then reuses it. Throws when the commit is not in the
 * clone's history (a shallow clone), naming the fix.
 */
export async function buildOfCommit(commit: string): Promise<string> {
  const sha = resolveCommit(commit);
  const dir = join(REPO, '.cache', 'builds', sha);
  if (isBuilt(dir, sha)) return dir;
  // Built in a directory of its own and moved into place whole, so that a build cut short is
  // never taken for a finished one.
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    const tarball = join(partial, 'sources.tar');
    execFileSync('git', ['-C', REPO, 'archive', '--format=tar', '-o', tarball, sha, '--', ...SOURCES], { stdio: 'pipe' });
    execFileSync('tar', ['-xf', tarball, '-C', partial], { stdio: 'pipe' });
    rmSync(tarball);
    symlinkSync(join(REPO, 'node_modules'), join(partial, 'node_modules'), 'dir');
    await build({
      absWorkingDir: partial,
      entryPoints: typeScriptFiles(partial),
      outdir: 'dist',
      outbase: '.',
      format: 'esm',
      platform: 'node',
      target: 'es2022',
      sourcemap: true,
      tsconfig: 'tsconfig.build.json',
      logLevel: 'silent',
    });
    writeFileSync(join(partial, MARK), JSON.stringify({ commit: sha, recipe: RECIPE }));
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    const output = (error as { stdout?: Buffer; stderr?: Buffer }).stdout?.toString() ?? '';
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`building commit ${commit} (${sha}) for the test failed: ${(error as Error).message}\n${output}${stderr}`, { cause: error });
  }
  return dir;
}

/** The files tsconfig.build.json compiles, relative to `root`: src (but the lab's browser page), testkit, examples. */
function typeScriptFiles(root: string): string[] {
  return ['src', 'testkit', 'examples']
    .flatMap((dir) => readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).map((file) => join(dir, file)))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.startsWith(join('src', 'lab', 'page')));
}

function isBuilt(dir: string, sha: string): boolean {
  const mark = join(dir, MARK);
  if (!existsSync(mark)) return false;
  const made = JSON.parse(readFileSync(mark, 'utf8')) as { commit?: string; recipe?: string };
  return made.commit === sha && made.recipe === RECIPE;
}

/** The full hash of `commit`, or an error that says why it is missing and how to get it. */
function resolveCommit(commit: string): string {
  try {
    return execFileSync('git', ['-C', REPO, 'rev-parse', '--verify', '--quiet', `${commit}^{commit}`], { encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch (error) {
    const checkout = gitSays(['rev-parse', '--git-dir']) !== undefined;
    const shallow = gitSays(['rev-parse', '--is-shallow-repository']) === 'true';
    const why = !checkout ? `${REPO} is not a git checkout` : shallow ? 'this clone is shallow' : 'the commit is not in its history';
    const fix = checkout
      ? 'fetch the full history (`git fetch --unshallow`, or clone without --depth)'
      : 'run the tests in a git clone of orderly, with its full history';
    throw new Error(`the rolling-upgrade test builds commit ${commit} from this clone's git history, but ${why}: ${fix}, and run the test again`, {
      cause: error,
    });
  }
}

function gitSays(args: readonly string[]): string | undefined {
  try {
    return execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch {
    return undefined;
  }
}
