/** The forwarder process of bench/dbDistance.ts: argv host, port, one-way delay in ms; answers its parent over IPC. */
import { startTcpProxy } from "../test/helpers/tcpProxy.ts";

const [host, port, oneWayMs] = process.argv.slice(2);
const proxy = await startTcpProxy({ host: host!, port: Number(port) });
proxy.setDelay(Number(oneWayMs));
process.on("message", (m: { id: number; ask: "port" | "roundTrips"; reset?: boolean }) => {
  const value = m.ask === "port" ? proxy.port : proxy.roundTrips(m.reset === true);
  process.send!({ id: m.id, value });
});
process.on("disconnect", () => process.exit(0));
