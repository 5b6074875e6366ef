/**
 * Asks a broker over the Kafka wire protocol which brokers the cluster has,
 * with a hand-written Metadata v1 request: no client library needed.
 */
import { createServer, Socket } from "node:net";

const METADATA_API_KEY = 3;
const METADATA_VERSION = 1;
const CLIENT_ID = "orderly-broker-probe";

/** Encodes a Metadata v1 request for no topics (only the broker list). */
function metadataRequest(correlationId: number): Buffer {
  const clientId = Buffer.from(CLIENT_ID);
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4);
  let offset = body.writeInt16BE(METADATA_API_KEY, 0);
  offset = body.writeInt16BE(METADATA_VERSION, offset);
  offset = body.writeInt32BE(correlationId, offset);
  offset = body.writeInt16BE(clientId.length, offset);
  offset += clientId.copy(body, offset);
  body.writeInt32BE(0, offset); // topics: empty array
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

/** Reads the broker node ids from a Metadata v1 response (without its size prefix). */
function parseBrokerIds(response: Buffer, correlationId: number): number[] {
  if (response.readInt32BE(0) !== correlationId) throw new Error("unexpected correlation id");
  let offset = 4;
  const count = response.readInt32BE(offset);
  offset += 4;
  const ids: number[] = [];
  for (let i = 0; i < count; i += 1) {
    ids.push(response.readInt32BE(offset));
    offset += 4;
    offset += 2 + response.readInt16BE(offset); // host
    offset += 4; // port
    const rack = response.readInt16BE(offset);
    offset += 2 + Math.max(rack, 0);
  }
  return ids;
}

/** Sends one request frame and resolves with the response frame (without its size prefix). */
function roundTrip(port: number, request: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let received = Buffer.alloc(0);
    const fail = (error: Error): void => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`no answer within ${timeoutMs} ms`)));
    socket.on("error", fail);
    socket.on("close", () => reject(new Error("connection closed")));
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 4 && received.length >= 4 + received.readInt32BE(0)) {
        socket.destroy();
        resolve(received.subarray(4, 4 + received.readInt32BE(0)));
      }
    });
    socket.connect(port, "127.0.0.1", () => socket.write(request));
  });
}

/**
 * The ids of the brokers that the broker on `port` reports as alive
 * (registered and unfenced), or undefined when it does not answer.
 */
export async function liveBrokerIds(port: number, timeoutMs = 2000): Promise<number[] | undefined> {
  const correlationId = Math.floor(Math.random() * 0x7fffffff);
  try {
    const response = await roundTrip(port, metadataRequest(correlationId), timeoutMs);
    return parseBrokerIds(response, correlationId);
  } catch {
    return undefined;
  }
}

/** True when nothing listens on 127.0.0.1:`port` (checked by binding it for a moment). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resolve(true)));
  });
}
