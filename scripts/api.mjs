// The public API of each entry point, as API Extractor reports it (api/*.api.md, checked in).
//
//   node scripts/api.mjs check    fails when a report differs from the compiled declarations (scripts/test.sh)
//   node scripts/api.mjs update   rewrites the reports (npm run api:update builds first)
//
// A change of the public surface then shows in review as a change of api/*.api.md.
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entryPoints = [
  { report: 'orderly', types: 'dist/src/index.d.ts' },
  { report: 'orderly-kafka', types: 'dist/src/kafka/index.d.ts' },
  { report: 'orderly-testkit', types: 'dist/testkit/index.d.ts' },
  { report: 'orderly-metrics', types: 'dist/src/metrics/index.d.ts' },
  { report: 'orderly-providers-openai', types: 'dist/src/providers/openai.d.ts' },
  { report: 'orderly-providers-anthropic', types: 'dist/src/providers/anthropic.d.ts' },
  { report: 'orderly-providers-ai-sdk', types: 'dist/src/providers/aiSdk.d.ts' },
];

const mode = process.argv[2];
if (mode !== 'check' && mode !== 'update') {
  console.error('usage: node scripts/api.mjs check|update');
  process.exit(2);
}

let changed = 0;
for (const entry of entryPoints) {
  const config = ExtractorConfig.prepare({
    configObject: configOf(entry),
    configObjectFullPath: undefined,
    packageJsonFullPath: join(root, 'package.json'),
  });
  const result = Extractor.invoke(config, { localBuild: mode === 'update', showVerboseMessages: false });
  if (!result.succeeded || (mode === 'check' && result.apiReportChanged)) {
    changed += 1;
    console.error(
      mode === 'check'
        ? `api: the public API of ${entry.types} differs from api/${entry.report}.api.md (the new one is in .cache/api/); if the change is intended, run npm run api:update and commit the report`
        : `api: could not write api/${entry.report}.api.md (${result.errorCount} errors)`,
    );
  }
}
process.exit(changed === 0 ? 0 : 1);

function configOf(entry) {
  return {
    projectFolder: root,
    mainEntryPointFilePath: join(root, entry.types),
    compiler: {
      overrideTsconfig: {
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          skipLibCheck: true,
        },
        files: [join(root, entry.types)],
      },
    },
    apiReport: {
      enabled: true,
      reportFileName: `${entry.report}.api.md`,
      reportFolder: join(root, 'api'),
      reportTempFolder: join(root, '.cache', 'api'),
    },
    docModel: { enabled: false },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    newlineKind: 'lf',
    messages: {
      // What API Extractor notices (an exported type that names an unexported one, ...) is written
      // into the report, so it is reviewed with the surface instead of failing the build.
      compilerMessageReporting: { default: { logLevel: 'warning' } },
      extractorMessageReporting: {
        default: { logLevel: 'none', addToApiReportFile: true },
        'ae-missing-release-tag': { logLevel: 'none', addToApiReportFile: false },
        // Listed with file positions, which move with every edit; '(undocumented)' marks them anyway.
        'ae-undocumented': { logLevel: 'none', addToApiReportFile: false },
      },
      tsdocMessageReporting: { default: { logLevel: 'none' } },
    },
  };
}
