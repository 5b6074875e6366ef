// RateLimited is a contract of decide functions and lives in graph/; re-exported for the DSL's importers.
export { RateLimited, isRateLimited } from '../graph/rateLimited.js';
