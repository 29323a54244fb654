// An HTTP front on 127.0.0.1 in front of a real chain RPC that rate-limits the way hosted providers do
// (/work/shared/research/failures.md): each POST is either forwarded to the chain and its answer passed back,
// or answered with a limit in one of the providers' shapes, as the test's policy decides call by call.
import { createServer, request, Agent, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The shapes of a rate limit: HTTP 429 with a JSON-RPC body or a plain one, HTTP 200 with -32005 or -32016, 429 with
 * Retry-After, and HTTP 200 with -32005 stating its wait in `data.backoff_seconds` (as Infura does).
 */
export type LimitShape = "429-json" | "429-plain" | "200-32005" | "200-32016" | "retry-after" | "200-32005-backoff";

/** Decides the `n`th call (from 0) to the front: a limit's shape, or undefined to forward it. */
export type LimitPolicy = (n: number, method: string) => LimitShape | undefined;

export interface RateLimitFront {
  readonly url: string;
  readonly port: number;
  /** Calls answered with a limit, and forwarded to the chain. */
  readonly limited: number;
  readonly forwarded: number;
  /** Calls forwarded to the chain whose JSON body contains `text` (case-insensitive). */
  forwardedWith(text: string): number;
  /** `retryAfterSeconds`: the wait the "retry-after" and "200-32005-backoff" shapes state (default 1). */
  setPolicy(policy: LimitPolicy, retryAfterSeconds?: number): void;
  close(): Promise<void>;
}

export const SHAPES: readonly LimitShape[] = ["429-json", "200-32005", "200-32016", "retry-after"];
export const passAll: LimitPolicy = () => undefined;

export async function startRateLimitFront(chainUrl: string, initial: LimitPolicy = passAll): Promise<RateLimitFront> {
  const target = new URL(chainUrl);
  const agent = new Agent({ keepAlive: true });
  let policy = initial;
  let retryAfter = 1;
  let calls = 0;
  let limited = 0;
  let forwarded = 0;
  const bodies: string[] = [];

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      let parsed: { id?: unknown; method?: string } = {};
      try {
        parsed = JSON.parse(body.toString("utf8")) as typeof parsed;
      } catch {
        // not JSON: forwarded as it is
      }
      const shape = policy(calls++, parsed.method ?? "");
      if (shape !== undefined) {
        limited++;
        const id = parsed.id ?? null;
        const json = (status: number, code: number, message: string, headers: Record<string, string> = {}, data?: unknown) => {
          res.writeHead(status, { "content-type": "application/json", ...headers });
          res.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message, ...(data === undefined ? {} : { data }) } }));
        };
        if (shape === "429-json") json(429, -32016, "over rate limit");
        else if (shape === "429-plain") {
          res.writeHead(429, { "content-type": "text/plain" });
          res.end("Too Many Requests");
        } else if (shape === "200-32005") json(200, -32005, "daily request count exceeded, request rate limited");
        else if (shape === "200-32016") json(200, -32016, "over rate limit");
        else if (shape === "200-32005-backoff") json(200, -32005, "daily request count exceeded, request rate limited", {}, { backoff_seconds: retryAfter });
        else json(429, -32005, "limit exceeded", { "retry-after": String(retryAfter) });
        return;
      }
      forwarded++;
      bodies.push(body.toString("utf8").toLowerCase());
      const upstream = request(
        { host: target.hostname, port: target.port, path: target.pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": body.length } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "application/json" });
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get limited() {
      return limited;
    },
    get forwarded() {
      return forwarded;
    },
    forwardedWith: (text) => bodies.filter((body) => body.includes(text.toLowerCase())).length,
    setPolicy(next, seconds = 1) {
      policy = next;
      retryAfter = seconds;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
