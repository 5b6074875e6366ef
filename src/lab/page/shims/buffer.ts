// The state code and level's encodings use Node's global Buffer; the browser gets the buffer
// package's, injected by the bundler wherever `Buffer` is referenced.
export { Buffer } from 'buffer';
