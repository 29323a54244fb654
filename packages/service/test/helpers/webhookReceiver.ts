// A real webhook receiver on 127.0.0.1: records every request (raw body and headers) and answers by mode:
//   "ok" 200 (or `answer`'s JSON), "fail" 500, "hang" reads the request and never answers.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

export type ReceiverMode = "ok" | "fail" | "hang";

export interface ReceivedRequest {
  id: string;
  type: string;
  signature: string;
  body: string;
  json: any;
  at: number;
  /** What the receiver answered ("hang": nothing). */
  answered: ReceiverMode;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly port: number;
  mode: ReceiverMode;
  /** The JSON answered in "ok" mode (default {"received": true}). */
  answer: (request: ReceivedRequest) => unknown;
  readonly requests: ReceivedRequest[];
  /** The requests answered 200. */
  delivered(): ReceivedRequest[];
  /** Resolves when `predicate` holds (checked on every request and every 20 ms), or rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(mode: ReceiverMode = "ok", path = "/hooks"): Promise<WebhookReceiver> {
  const sockets = new Set<Socket>();
  const receiver = {
    mode,
    answer: (() => ({ received: true })) as (request: ReceivedRequest) => unknown,
    requests: [] as ReceivedRequest[],
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const request: ReceivedRequest = {
        id: String(req.headers["x-paymaster-event-id"] ?? ""),
        type: String(req.headers["x-paymaster-event-type"] ?? ""),
        signature: String(req.headers["x-paymaster-signature"] ?? ""),
        body,
        json,
        at: Date.now(),
        answered: receiver.mode,
      };
      receiver.requests.push(request);
      if (receiver.mode === "hang") return;
      if (receiver.mode === "fail") {
        res.writeHead(500).end("no");
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(receiver.answer(request)));
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    delivered: () => receiver.requests.filter((r) => r.answered === "ok"),
    async waitFor(predicate: () => boolean, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not met within ${timeoutMs} ms (${receiver.requests.length} requests)`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
