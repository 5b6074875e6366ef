/** A topology that cannot run correctly, refused when it is built. Names the operator and the fix. */
export class TopologyError extends Error {
  constructor(
    readonly operator: string,
    message: string,
  ) {
    super(message);
    this.name = 'TopologyError';
  }
}
