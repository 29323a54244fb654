// The chain client's HTTP/1.1 transport (src/chain/httpPost.ts) against real servers on 127.0.0.1: node's
// http server, and a raw TCP server writing exactly the bytes of each response shape (chunked, delimited by
// the connection's end, interim 1xx answers, answers split at every byte).
import { expect } from "chai";
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import path from "node:path";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { createHttpPoster, type HttpPoster } from "../src/chain/httpPost.ts";

/** A raw server: `respond` gets each request's bytes (head and body as one string) and the socket. */
async function rawServer(respond: (request: string, socket: Socket) => void): Promise<{ url: string; server: NetServer; connections: () => number }> {
  let connections = 0;
  const server = createNetServer((socket) => {
    connections++;
    let buffered = "";
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      const headEnd = buffered.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, headEnd))?.[1] ?? 0);
      if (buffered.length < headEnd + 4 + length) return;
      const request = buffered.slice(0, headEnd + 4 + length);
      buffered = buffered.slice(headEnd + 4 + length);
      respond(request, socket);
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, connections: () => connections };
}

async function closeServer(server: NetServer | HttpServer): Promise<void> {
  (server as HttpServer).closeAllConnections?.();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error("expected a rejection");
}

describe("chain HTTP transport (httpPost)", () => {
  const posters: HttpPoster[] = [];
  const servers: (NetServer | HttpServer)[] = [];
  afterEach(async () => {
    for (const poster of posters.splice(0)) poster.close();
    for (const server of servers.splice(0)) await closeServer(server);
  });
  const poster = (url: string): HttpPoster => {
    const created = createHttpPoster(url);
    expect(created, url).to.not.equal(undefined);
    posters.push(created!);
    return created!;
  };

  it("posts the JSON body with its length, path, query, Host and basic auth, and reuses the kept-alive connection", async () => {
    const seen: { url: string | undefined; headers: Record<string, unknown>; body: string; socket: unknown }[] = [];
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        seen.push({ url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), socket: req.socket });
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const post = poster(`http://us%40er:p%3Ass@127.0.0.1:${port}/v2/path?key=abc`);
    const payload = '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":["é"]}';
    for (let i = 0; i < 3; i++) {
      const answer = await post.post(payload).answer;
      expect(answer.status).to.equal(200);
      expect(answer.body.toString("utf8")).to.equal('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
    }
    expect(seen.map((s) => s.body)).to.deep.equal([payload, payload, payload]);
    expect(seen[0]!.url).to.equal("/v2/path?key=abc");
    expect(seen[0]!.headers["host"]).to.equal(`127.0.0.1:${port}`);
    expect(seen[0]!.headers["content-type"]).to.equal("application/json");
    expect(seen[0]!.headers["content-length"]).to.equal(String(Buffer.byteLength(payload)));
    expect(seen[0]!.headers["authorization"]).to.equal(`Basic ${Buffer.from("us@er:p:ss").toString("base64")}`);
    expect(new Set(seen.map((s) => s.socket)).size, "one connection for the three calls").to.equal(1);
  });

  it("reads chunked answers (with extensions and trailers), answers split at every byte, and skips interim 1xx answers", async () => {
    const body = '{"jsonrpc":"2.0","id":1,"result":"0xabcdef"}';
    const chunked = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\n${body.slice(0, 5)}\r\n${(body.length - 5).toString(16)}\r\n${body.slice(5)}\r\n0\r\nX-Trailer: t\r\n\r\n`;
    const interim = `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const answers = [chunked, interim];
    let next = 0;
    const { url, server, connections } = await rawServer((_request, socket) => {
      const bytes = answers[next++ % answers.length]!;
      // One byte per write, on the same kept-alive connection.
      let i = 0;
      const drip = () => {
        if (i >= bytes.length) return;
        socket.write(bytes[i++]!, "latin1");
        setImmediate(drip);
      };
      drip();
    });
    servers.push(server);
    const post = poster(url);
    for (let round = 0; round < 2; round++) {
      const answer = await post.post("{}").answer;
      expect(answer.status).to.equal(200);
      expect(answer.body.toString()).to.equal(body);
    }
    expect(connections(), "both answers on one connection").to.equal(1);
  });

  it("reads an answer delimited by the connection's end, then opens a new connection", async () => {
    const { url, server, connections } = await rawServer((_request, socket) => {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\n\r\n<html>busy</html>');
    });
    servers.push(server);
    const post = poster(url);
    for (let i = 0; i < 2; i++) {
      const answer = await post.post("{}").answer;
      expect(answer.status).to.equal(503);
      expect(answer.body.toString()).to.equal("<html>busy</html>");
    }
    expect(connections()).to.equal(2);
  });

  it("does not reuse a connection the server answered with Connection: close, nor one it closed while idle", async () => {
    let closeNext = true;
    const { url, server, connections } = await rawServer((_request, socket) => {
      const body = '{"result":1}';
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n${closeNext ? "Connection: close\r\n" : ""}\r\n${body}`);
      if (closeNext) socket.end();
      else setTimeout(() => socket.end(), 20); // the server's keep-alive timeout, while the connection is idle
    });
    servers.push(server);
    const post = poster(url);
    expect((await post.post("{}").answer).status).to.equal(200); // closed by the server: connection 1
    closeNext = false;
    expect((await post.post("{}").answer).status).to.equal(200); // connection 2, then closed while idle
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await post.post("{}").answer).status).to.equal(200); // connection 3
    expect(connections()).to.equal(3);
  });

  it("fails with a connection error when the answer breaks off, and with the caller's reason when aborted", async () => {
    const { url, server } = await rawServer((request, socket) => {
      if (request.includes("hang")) return; // never answers
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial");
      setTimeout(() => socket.destroy(), 10);
    });
    servers.push(server);
    const post = poster(url);
    const broken = await rejection(post.post("{}").answer);
    expect(broken.code).to.equal("ECONNRESET");
    const pending = post.post('{"hang":1}');
    setTimeout(() => pending.abort(new Error("gave up")), 30);
    expect((await rejection(pending.answer)).message).to.equal("gave up");
  });

  it("refuses malformed answers: not HTTP, a bad chunk size, a bad Content-Length", async () => {
    const bad = [
      "SSH-2.0-OpenSSH\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    ];
    let next = 0;
    const { url, server } = await rawServer((_request, socket) => socket.write(bad[next++]!));
    servers.push(server);
    const post = poster(url);
    for (let i = 0; i < bad.length; i++) {
      const error = await rejection(post.post("{}").answer);
      expect(error.code, bad[i]).to.match(/^HPE_/);
    }
  });

  it("speaks https over node:tls, verifying the certificate (a self-signed one is refused unless trusted)", async function () {
    this.timeout(20_000);
    const dir = mkdtempSync(path.join(tmpdir(), "httppost-tls-"));
    const [key, cert] = [path.join(dir, "key.pem"), path.join(dir, "cert.pem")];
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], { stdio: "ignore" });
    const server = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => res.end(JSON.stringify({ body, alpn: (req.socket as { alpnProtocol?: string }).alpnProtocol })));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `https://localhost:${(server.address() as AddressInfo).port}/rpc`;
    expect((await rejection(poster(url).post("{}").answer)).code).to.equal("DEPTH_ZERO_SELF_SIGNED_CERT");
    // Trusted through NODE_EXTRA_CA_CERTS (read at process start): a child process posts twice on one connection.
    const script = `import { createHttpPoster } from ${JSON.stringify(path.resolve("src/chain/httpPost.ts"))};
      const post = createHttpPoster(${JSON.stringify(url)});
      const answers = [];
      for (const n of [1, 2]) answers.push((await post.post(JSON.stringify({ n })).answer).body.toString());
      post.close();
      console.log(JSON.stringify(answers));`;
    // Asynchronously: the server answering it runs in this process.
    const { stdout: output } = await promisify(execFile)(process.execPath, ["--disable-warning=ExperimentalWarning", "--input-type=module", "-e", script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: cert },
      encoding: "utf8",
    });
    expect(JSON.parse(output.trim()).map((answer: string) => JSON.parse(answer))).to.deep.equal([
      { body: '{"n":1}', alpn: "http/1.1" },
      { body: '{"n":2}', alpn: "http/1.1" },
    ]);
  });

  it("reports a refused connection with its code, and takes only http(s) URLs", async () => {
    const { url, server } = await rawServer(() => undefined);
    await closeServer(server);
    expect((await rejection(poster(url).post("{}").answer)).code).to.equal("ECONNREFUSED");
    expect(createHttpPoster("ws://127.0.0.1:8546")).to.equal(undefined);
    expect(createHttpPoster("not a url")).to.equal(undefined);
  });
});
