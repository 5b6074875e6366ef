// The test driver yields with setImmediate between steps. Browsers lack it, and setTimeout(0)
// is clamped to 4 ms once nested, which would turn a run's thousands of steps into seconds:
// a MessageChannel message runs as soon as the current task ends, unclamped.
const queue: Array<() => void> = [];
const channel = new MessageChannel();
channel.port1.onmessage = () => queue.shift()?.();

if (typeof (globalThis as { setImmediate?: unknown }).setImmediate !== 'function') {
  (globalThis as unknown as { setImmediate: (callback: () => void) => void }).setImmediate = (callback) => {
    queue.push(callback);
    channel.port2.postMessage(undefined);
  };
}
