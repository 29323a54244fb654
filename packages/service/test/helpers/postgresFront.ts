// A front on 127.0.0.1 that answers a PostgreSQL client's TLS negotiation itself and forwards the session, in
// clear, to a real PostgreSQL server: the client connects with `sslmode=verify-full&sslrootcert=<caFile>` as to a
// server with TLS on. Its modes are the real handshake faults a client meets:
//   "tls"        answers yes to the client's SSLRequest and serves TLS with the certificate the client trusts;
//   "untrusted"  the same with another self-signed certificate (a rotated or wrong certificate: verification fails);
//   "no-tls"     answers no to the SSLRequest (a server with ssl = off);
//   "garbage"    answers what an HTTP server says to bytes it does not understand (a wrong port, a middlebox).
// Changing the mode cuts the connections open through the front (a server restarted with its new settings).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { TLSSocket } from "node:tls";

export type FrontMode = "tls" | "untrusted" | "no-tls" | "garbage";

export interface PostgresFront {
  readonly port: number;
  /** The certificate the client trusts (its sslrootcert). */
  readonly caFile: string;
  setMode(mode: FrontMode): void;
  close(): Promise<void>;
}

/** PostgreSQL's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/** A self-signed certificate for 127.0.0.1 (openssl, as test/httpPost.test.ts makes one). */
function selfSigned(dir: string, name: string): { key: Buffer; cert: Buffer; certFile: string } {
  const [keyFile, certFile] = [path.join(dir, `${name}.key`), path.join(dir, `${name}.pem`)];
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", `/CN=${name}`, "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  return { key: readFileSync(keyFile), cert: readFileSync(certFile), certFile };
}

export async function startPostgresFront(target: { host: string; port: number }, initial: FrontMode = "tls"): Promise<PostgresFront> {
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-pg-front-"));
  const trusted = selfSigned(dir, "trusted");
  const untrusted = selfSigned(dir, "untrusted");
  let mode = initial;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };

  /** The session after the handshake: both ways between the (decrypted) client and the server. */
  const forward = (client: Socket, first?: Buffer) => {
    const upstream = connect(target);
    track(upstream);
    if (first) upstream.write(first);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  };

  const server: Server = createServer((client) => {
    track(client);
    client.once("data", (first: Buffer) => {
      if (mode === "garbage") return void client.end("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
      if (!first.equals(SSL_REQUEST)) return forward(client, first); // a client that asks for no TLS
      if (mode === "no-tls") return void client.write("N");
      client.write("S");
      const certificate = mode === "tls" ? trusted : untrusted;
      const secure = new TLSSocket(client, { isServer: true, key: certificate.key, cert: certificate.cert });
      track(secure);
      forward(secure);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0 }, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    caFile: trusted.certFile,
    setMode(next) {
      mode = next;
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
