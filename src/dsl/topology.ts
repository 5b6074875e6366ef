// The compiled Topology lives in graph/ (the engine runs it); re-exported for the DSL's importers.
export { Topology } from '../graph/topology.js';
