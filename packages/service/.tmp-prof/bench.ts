import fs from "node:fs"; import os from "node:os"; import path from "node:path";
import { openSqliteStore } from "../src/store/sqlite.ts";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pm-bench-"));
const store = openSqliteStore(path.join(dir, "b.sqlite"));
const p = await store.createProject("b");
const keys = [];
for (let i = 0; i < 1000; i++) keys.push(await store.createApiKey(p.id));
const { apiKey, plaintext } = keys[500]!;
const SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as const;
const EP = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789" as const;
await store.creditGasTank("local", SENDER, 10n ** 30n, "c");
const N = 10_000;
async function time(label: string, fn: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 1000; i++) await fn(-1 - i); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await fn(i);
  const us = Number(process.hrtime.bigint() - t0) / 1000 / N;
  console.log(`${label.padEnd(44)} ${us.toFixed(1)} µs/op`);
}
const op = (nonce: bigint, mode: "sponsor" | "user") => ({ network: "local", entryPoint: EP, version: "v0.6" as const, sender: SENDER, nonce, mode, projectId: p.id, apiKeyId: apiKey.id, strategyId: null, token: null, exchangeRate: null, maxTokenCost: null, maxCostWei: 10n ** 15n, validUntil: 2e9, validAfter: 1.7e9 });
await time("findApiKey (hit, 1000 keys)", () => store.findApiKey(plaintext));
await time("findApiKey (miss)", () => store.findApiKey("pm_doesnotexist_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
await time("reserveSponsorship sponsor, new nonce", (i) => store.reserveSponsorship(op(BigInt(i + 2000), "sponsor")));
await time("reserveSponsorship user (tank), new nonce", (i) => store.reserveSponsorship(op(BigInt(i + 100000), "user")));
await time("reserveSponsorship user, same nonce (replace)", () => store.reserveSponsorship(op(7n, "user")));
await time("reserve + markSigned + release (user)", async (i) => { const r = await store.reserveSponsorship(op(BigInt(i + 300000), "user")); if (r.ok) { await store.markSigned(r.record.id, { userOpHash: `0x${"ab".repeat(32)}`, paymasterAndData: "0x1234" }); await store.releaseSponsorship(r.record.id); } });
console.log("tank", await store.getGasTank("local", SENDER));
await store.close(); fs.rmSync(dir, { recursive: true });
