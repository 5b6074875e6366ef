// Serdes are a contract of the graph and live in graph/; re-exported for the DSL's importers.
export { json, string } from '../graph/serde.js';
export type { Serde } from '../graph/serde.js';
