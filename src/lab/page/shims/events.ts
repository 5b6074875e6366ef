// The browser has no node:events. The engine only raises the listener limit of its abort signals,
// a Node warning threshold that browsers do not have: nothing to do.
export function setMaxListeners(): void {}
