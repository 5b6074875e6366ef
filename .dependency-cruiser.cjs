// The layers (ports → graph → state → dsl → engine → kafka, testkit → cli; README.md, "Layers")
// as forbidden imports, and no cycles. Type-only imports count: `import type` ties two layers as
// much as a value import does. `npm run -s lint:layers` runs it (so do `npm run -s lint` and
// scripts/test.sh); a violation names its rule, the importing file and the imported one.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'A cycle makes two modules one: neither can be read, tested or moved alone.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'resolvable',
      comment: 'An import the cruiser cannot resolve is an edge it cannot check: a moved file, a typo, or a package that is not installed.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    layer('ports', 'ports import nothing of the project', '^src/ports/', ['^src/(?!ports/)', '^testkit/']),
    layer('graph', 'graph imports only ports', '^src/graph/', ['^src/(?!(graph|ports)/)', '^testkit/']),
    layer('state', 'state imports only graph and ports', '^src/state/', ['^src/(?!(state|graph|ports)/)', '^testkit/']),
    layer('dsl', 'dsl never imports engine, kafka, testkit or cli', '^src/dsl/', ['^src/(engine|kafka|cli)/', '^testkit/']),
    layer('engine', 'engine never imports dsl, kafka, testkit or cli', '^src/engine/', ['^src/(dsl|kafka|cli)/', '^testkit/']),
    layer('kafka', 'kafka never imports testkit or cli', '^src/kafka/', ['^src/cli/', '^testkit/']),
    // Within kafka: the log (clients, poll loop, ownership, producer, transactions) knows nothing of
    // what is written through it; the changelog knows nothing of parked keys.
    layer('kafka-log', 'kafka/log never imports kafka/changelog or kafka/parked', '^src/kafka/log/', ['^src/kafka/(changelog|parked)/']),
    layer('kafka-changelog', 'kafka/changelog never imports kafka/parked', '^src/kafka/changelog/', ['^src/kafka/parked/']),
    layer('testkit', 'testkit never imports kafka or cli', '^testkit/', ['^src/(kafka|cli)/']),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Packages resolve through their `exports`, as Node and TypeScript resolve them.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'types', 'default'] },
  },
};

/** A layer's forbidden imports, named after the layer so that a violation names the rule it broke. */
function layer(name, comment, from, to) {
  return { name: `${name}-layer`, comment, severity: 'error', from: { path: from }, to: { path: to } };
}
