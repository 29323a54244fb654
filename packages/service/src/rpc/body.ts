/**
 * Reads a request body with a byte limit. Nothing past the limit is buffered: the read stops with
 * BODY_TOO_LARGE as soon as the declared length or the bytes received pass it. The rest of the upload is
 * then discarded (so the 413 reaches the client cleanly) up to a drain cap, past which the connection is
 * cut; the server's requestTimeout bounds the time it may take.
 */
import type { IncomingMessage } from "node:http";
import { RpcError } from "./errors.ts";

export interface ReadBodyOptions {
  /** Largest accepted body, in bytes. */
  limitBytes: number;
  /** After a refusal, at most this many further bytes are read and discarded before the connection is cut. */
  drainLimitBytes?: number;
}

/** Default drain cap: four times the limit, at least 1 MiB. */
export function defaultDrainLimit(limitBytes: number): number {
  return Math.max(4 * limitBytes, 1024 * 1024);
}

function tooLarge(limitBytes: number): RpcError {
  return new RpcError("BODY_TOO_LARGE", `The request body is larger than ${limitBytes} bytes`, { limitBytes });
}

/** Discards whatever of the body is still coming, cutting the connection after `capBytes`. */
function discardRest(req: IncomingMessage, capBytes: number): void {
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > capBytes) req.socket.destroy();
  });
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
