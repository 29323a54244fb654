/**
 * Reads a request body with a byte limit. Nothing past the limit is buffered: the read stops with
 * BODY_TOO_LARGE as soon as the declared length or the bytes received pass it.
 *
 * The rest of the upload is then read and discarded, and the connection stays usable: a server that closes
 * while the client is still writing resets the connection, and a client busy writing (Node's fetch, about one
 * upload in three of 5 MB) then reports the reset instead of the 413 it had been sent (curl, which waits for
 * 100-continue, never noticed). Discarding is bounded: past a drain cap in bytes, or DRAIN_MS after the
 * refusal, the connection is cut.
 */
import type { IncomingMessage } from "node:http";
import { RpcError } from "../errors.ts";

export interface ReadBodyOptions {
  /** Largest accepted body, in bytes. */
  limitBytes: number;
  /** After a refusal, at most this many further bytes are read and discarded before the connection is cut. */
  drainLimitBytes?: number;
}

/** Default drain cap: four times the limit, at least 16 MiB (discarding costs a copy, not memory). */
export function defaultDrainLimit(limitBytes: number): number {
  return Math.max(4 * limitBytes, 16 * 1024 * 1024);
}

/** After a refusal, the rest of the upload is discarded for at most this long before the connection is cut. */
export const DRAIN_MS = 10_000;

function tooLarge(limitBytes: number): RpcError {
  return new RpcError("BODY_TOO_LARGE", `The request body is larger than ${limitBytes} bytes`, { limitBytes });
}

/** Discards whatever of the body is still coming, cutting the connection after `capBytes` or DRAIN_MS. */
function discardRest(req: IncomingMessage, capBytes: number): void {
  let discarded = 0;
  const cut = (): void => {
    clearTimeout(timer);
    req.socket.destroy();
  };
  const timer = setTimeout(cut, DRAIN_MS);
  timer.unref();
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > capBytes) cut();
  });
  req.on("end", () => clearTimeout(timer));
  req.on("close", () => clearTimeout(timer));
  req.on("error", () => {});
  req.resume();
}

/** The whole body as one Buffer, or a thrown RpcError (BODY_TOO_LARGE; INVALID_REQUEST if the upload broke off). */
export function readBody(req: IncomingMessage, options: ReadBodyOptions): Promise<Buffer> {
  const { limitBytes } = options;
  const drainLimit = options.drainLimitBytes ?? defaultDrainLimit(limitBytes);
  return new Promise<Buffer>((resolve, reject) => {
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > limitBytes) {
      discardRest(req, drainLimit);
      reject(tooLarge(limitBytes));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        chunks.length = 0;
        discardRest(req, Math.max(0, drainLimit - size));
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const broken = (): void => {
      cleanup();
      reject(new RpcError("INVALID_REQUEST", "The request body was not received completely"));
    };
    const onError = (): void => broken();
    const onClose = (): void => {
      if (!req.complete) broken();
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
