/**
 * A lean HTTP/1.1 POST for JSON-RPC on kept-alive sockets: one request at a time per connection, a pool of
 * idle connections per upstream, the request written in one piece and the response read straight off the
 * socket (Content-Length, chunked, or until the server closes).
 *
 * Why not node:http: on this path its ClientRequest/IncomingMessage/agent machinery cost the service ~140 µs
 * of CPU per chain call and ~0.25 ms of latency (measured against the local chain, see "Benchmark" in the
 * README), more than all of a sponsorship's own decisions. Only what a JSON-RPC POST needs is here: no
 * redirects, no compression (none is asked for), no proxies (node:http followed none either). https URLs run
 * the same framing over node:tls (certificates verified as node:https does).
 *
 * Timeouts are the caller's: it aborts a request (the socket is destroyed) when it gives up on it.
 */
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { isIP } from "node:net";

export interface HttpAnswer {
  status: number;
  body: Buffer;
  /** The Retry-After header, as given (a rate-limited answer may carry it); undefined without one. */
  retryAfter: string | undefined;
}

export interface PendingPost {
  readonly answer: Promise<HttpAnswer>;
  /** Gives up: the connection is destroyed and `answer` rejects with `reason` (if it has not settled). */
  abort(reason: Error): void;
}

export interface HttpPoster {
  /** `traceparent`: the calling span's W3C header value (hex and dashes only), sent as that header. */
  post(payload: string, traceparent?: string): PendingPost;
  /** Closes the idle connections (in-flight ones finish). */
  close(): void;
}

/** An idle connection the server has not used for this long is not reused (servers commonly close at 5 s). */
const IDLE_REUSE_MS = 4_000;
/** Most idle connections kept per upstream; more are closed as they come free. */
const MAX_IDLE = 32;
const CRLF_CRLF = Buffer.from("\r\n\r\n");
/** A W3C traceparent value as our spans write it: nothing else ever reaches the request head. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The error an HTTP exchange fails with: `code` mirrors node's socket error codes where there is one. */
export class HttpPostError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "HttpPostError";
    this.code = code;
  }
}

interface Target {
  tls: boolean;
  host: string;
  port: number;
  /** The request head before Content-Length (method, path, Host, fixed headers, Authorization). */
  headStart: string;
}

/** The poster for an http(s) URL, or undefined when the URL is not one. */
export function createHttpPoster(url: string): HttpPoster | undefined {
  const target = targetOf(url);
  if (!target) return undefined;
  const idle: { conn: Connection; since: number }[] = [];
  let closed = false;

  const release = (conn: Connection): void => {
    if (closed || idle.length >= MAX_IDLE || !conn.reusable()) {
      conn.destroy();
      return;
    }
    // Idle connections never keep the process alive (as node's agent does it).
    conn.unref();
    idle.push({ conn, since: performance.now() });
  };

  const acquire = (): Connection => {
    const now = performance.now();
    while (idle.length > 0) {
      const { conn, since } = idle.pop()!; // the most recently used: the least likely to be closed by the server
      if (now - since < IDLE_REUSE_MS && conn.reusable()) {
        conn.ref();
        return conn;
      }
      conn.destroy();
    }
    return new Connection(target, (conn) => {
      const index = idle.findIndex((entry) => entry.conn === conn);
      if (index >= 0) idle.splice(index, 1);
    });
  };

  return {
    post(payload, traceparent) {
      const conn = acquire();
      const trace = traceparent !== undefined && TRACEPARENT.test(traceparent) ? `traceparent: ${traceparent}\r\n` : "";
      return conn.exchange(`${target.headStart}${trace}Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`, release);
    },
    close() {
      closed = true;
      for (const { conn } of idle.splice(0)) conn.destroy();
    },
  };
}

function targetOf(url: string): Target | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
  const tls = parsed.protocol === "https:";
  // URL keeps IPv6 literals bracketed in hostname; sockets want them bare.
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const port = parsed.port === "" ? (tls ? 443 : 80) : Number(parsed.port);
  const auth =
    parsed.username || parsed.password
      ? `Authorization: Basic ${Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString("base64")}\r\n`
      : "";
  const path = `${parsed.pathname || "/"}${parsed.search}`;
  const headStart =
    `POST ${path} HTTP/1.1\r\nHost: ${parsed.host}\r\n${auth}` + "Content-Type: application/json\r\nAccept: application/json\r\nConnection: keep-alive\r\n";
  return { tls, host, port, headStart };
}

type Phase = "idle" | "head" | "body" | "chunked" | "untilClose" | "dead";

/** One kept-alive connection: at most one exchange at a time. */
class Connection {
  readonly #socket: Socket | TLSSocket;
  readonly #onIdleClose: (conn: Connection) => void;
  #phase: Phase = "idle";
  /** Bytes received and not yet consumed by the parser. */
  #pending: Buffer = Buffer.alloc(0);
  #status = 0;
  #retryAfter: string | undefined;
  #keepAlive = true;
  #remaining = 0;
  #chunkState: "size" | "data" | "dataEnd" | "trailers" = "size";
  #body: Buffer[] = [];
  #bodyBytes = 0;
  #settle: ((error: Error | undefined, answer?: HttpAnswer) => void) | undefined;

  constructor(target: Target, onIdleClose: (conn: Connection) => void) {
    this.#onIdleClose = onIdleClose;
    const socket = target.tls
      ? tlsConnect({ host: target.host, port: target.port, ...(isIP(target.host) ? {} : { servername: target.host }), ALPNProtocols: ["http/1.1"] })
      : netConnect({ host: target.host, port: target.port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1_000);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", (error: Error) => this.#fail(error));
    socket.on("end", () => this.#onEnd());
    socket.on("close", () => this.#fail(new HttpPostError("ECONNRESET", "the connection closed")));
    this.#socket = socket;
  }

  /** Whether another request may be written on this connection. */
  reusable(): boolean {
    return this.#phase === "idle" && this.#keepAlive && !this.#socket.destroyed && this.#socket.writable;
  }

  ref(): void {
    this.#socket.ref();
  }

  unref(): void {
    this.#socket.unref();
  }

  destroy(): void {
    this.#phase = "dead";
    this.#socket.destroy();
  }

  exchange(request: string, release: (conn: Connection) => void): PendingPost {
    this.#phase = "head";
    this.#status = 0;
    this.#retryAfter = undefined;
    this.#body = [];
    this.#bodyBytes = 0;
    let abort!: (reason: Error) => void;
    const answer = new Promise<HttpAnswer>((resolve, reject) => {
      let settled = false;
      this.#settle = (error, result) => {
        if (settled) return;
        settled = true;
        this.#settle = undefined;
        if (error) {
          this.destroy();
          reject(error);
          return;
        }
        this.#phase = "idle";
        release(this);
        resolve(result!);
      };
      abort = (reason) => this.#settle?.(reason);
    });
    this.#socket.write(request);
    return { answer, abort };
  }

  #fail(error: Error): void {
    if (this.#settle) this.#settle(error);
    else if (this.#phase !== "dead") {
      // Closed or broken while idle (the server's keep-alive timeout): no longer usable.
      this.#phase = "dead";
      this.#socket.destroy();
      this.#onIdleClose(this);
    }
  }

  #onEnd(): void {
    // A body delimited by the connection's end is complete now; anything else broke off.
    if (this.#phase === "untilClose" && this.#settle) {
      this.#keepAlive = false;
      this.#finish();
      return;
    }
    this.#fail(new HttpPostError("ECONNRESET", this.#phase === "head" ? "the connection closed before an answer" : "the response broke off"));
  }

  #onData(chunk: Buffer): void {
    if (!this.#settle) {
      // Bytes nobody asked for (no request in flight): the connection cannot be trusted any more.
      this.destroy();
      this.#onIdleClose(this);
      return;
    }
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    try {
      this.#parse();
    } catch (error) {
      this.#settle?.(error as Error);
    }
  }

  #parse(): void {
    for (;;) {
      switch (this.#phase) {
        case "head": {
          const end = this.#pending.indexOf(CRLF_CRLF);
          if (end < 0) {
            if (this.#pending.length > 64 * 1024) throw new HttpPostError("HPE_HEADER_OVERFLOW", "the response head is too large");
            return;
          }
          const head = this.#pending.toString("latin1", 0, end);
          this.#pending = this.#pending.subarray(end + 4);
          this.#readHead(head);
          break;
        }
        case "body": {
          const take = Math.min(this.#remaining, this.#pending.length);
          if (take > 0) this.#addBody(this.#pending.subarray(0, take));
          this.#pending = this.#pending.subarray(take);
          this.#remaining -= take;
          if (this.#remaining > 0) return;
          this.#finish();
          return;
        }
        case "chunked":
          if (!this.#parseChunks()) return;
          this.#finish();
          return;
        case "untilClose":
          if (this.#pending.length > 0) this.#addBody(this.#pending);
          this.#pending = Buffer.alloc(0);
          return;
        default:
          return;
      }
    }
  }

  #readHead(head: string): void {
    const lines = head.split("\r\n");
    const statusLine = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0] ?? "");
    if (!statusLine) throw new HttpPostError("HPE_INVALID_CONSTANT", "not an HTTP/1.x response");
    const status = Number(statusLine[2]);
    let contentLength: number | undefined;
    let chunked = false;
    let keepAlive = statusLine[1] === "1";
    let retryAfter: string | undefined;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "content-length") {
        if (!/^\d+$/.test(value)) throw new HttpPostError("HPE_INVALID_CONTENT_LENGTH", "invalid Content-Length");
        contentLength = Number(value);
      } else if (name === "transfer-encoding") {
        chunked = value.toLowerCase().split(",").map((v) => v.trim()).at(-1) === "chunked";
      } else if (name === "connection") {
        const tokens = value.toLowerCase().split(",").map((v) => v.trim());
        if (tokens.includes("close")) keepAlive = false;
        else if (tokens.includes("keep-alive")) keepAlive = true;
      } else if (name === "retry-after") {
        retryAfter = value;
      }
    }
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    if (status >= 100 && status < 200) return;
    this.#status = status;
    this.#retryAfter = retryAfter;
    this.#keepAlive = keepAlive;
    if (status === 204 || status === 304) {
      this.#phase = "body";
      this.#remaining = 0;
    } else if (chunked) {
      this.#phase = "chunked";
      this.#chunkState = "size";
    } else if (contentLength !== undefined) {
      this.#phase = "body";
      this.#remaining = contentLength;
    } else {
      this.#phase = "untilClose";
      this.#keepAlive = false;
    }
  }

  /** Consumes chunked framing from #pending; true once the last chunk and the trailers are read. */
  #parseChunks(): boolean {
    for (;;) {
      if (this.#chunkState === "size" || this.#chunkState === "trailers" || this.#chunkState === "dataEnd") {
        const eol = this.#pending.indexOf("\r\n");
        if (eol < 0) {
          if (this.#pending.length > 16 * 1024) throw new HttpPostError("HPE_INVALID_CHUNK_SIZE", "a chunk line is too long");
          return false;
        }
        const line = this.#pending.toString("latin1", 0, eol);
        this.#pending = this.#pending.subarray(eol + 2);
        if (this.#chunkState === "dataEnd") {
          if (line !== "") throw new HttpPostError("HPE_INVALID_CHUNK_SIZE", "a chunk is longer than its size");
          this.#chunkState = "size";
          continue;
        }
        if (this.#chunkState === "trailers") {
          if (line === "") return true;
          continue;
        }
        const size = Number.parseInt(line.split(";")[0]!.trim(), 16);
        if (!Number.isFinite(size) || size < 0 || !/^[0-9a-fA-F]+$/.test(line.split(";")[0]!.trim())) {
          throw new HttpPostError("HPE_INVALID_CHUNK_SIZE", "invalid chunk size");
        }
        if (size === 0) this.#chunkState = "trailers";
        else {
          this.#remaining = size;
          this.#chunkState = "data";
        }
        continue;
      }
      const take = Math.min(this.#remaining, this.#pending.length);
      if (take > 0) this.#addBody(this.#pending.subarray(0, take));
      this.#pending = this.#pending.subarray(take);
      this.#remaining -= take;
      if (this.#remaining > 0) return false;
      this.#chunkState = "dataEnd";
    }
  }

  #addBody(bytes: Buffer): void {
    this.#body.push(bytes);
    this.#bodyBytes += bytes.length;
  }

  #finish(): void {
    // More bytes than the response held: without pipelining nothing may follow, so do not reuse.
    if (this.#pending.length > 0) this.#keepAlive = false;
    this.#pending = Buffer.alloc(0);
    const body = this.#body.length === 1 ? this.#body[0]! : Buffer.concat(this.#body, this.#bodyBytes);
    this.#body = [];
    this.#settle?.(undefined, { status: this.#status, body, retryAfter: this.#retryAfter });
  }
}
