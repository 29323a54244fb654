import { randomUUID } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
import fs from "node:fs"; import os from "node:os"; import path from "node:path";
import { SQLITE_MIGRATIONS } from "../src/store/migrations.ts";
const N = 10000;
function t(label: string, fn: (i: number) => unknown) { for (let i = 0; i < 1000; i++) fn(-i-1); const t0 = process.hrtime.bigint(); for (let i = 0; i < N; i++) fn(i); console.log(label.padEnd(40), (Number(process.hrtime.bigint() - t0) / 1000 / N).toFixed(2), "µs"); }
for (const variant of ["current", "memory", "fk-off", "no-fk-cols"]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pm-prof-"));
  const db = new DatabaseSync(variant === "memory" ? ":memory:" : path.join(dir, "x.sqlite"));
  db.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=${variant === "sync-off" ? "OFF" : "NORMAL"}; PRAGMA foreign_keys=${variant === "fk-off" ? "OFF" : "ON"};`);
  if (variant === "autockpt-10000") db.exec("PRAGMA wal_autocheckpoint=10000");
  db.exec(SQLITE_MIGRATIONS[0]!.sql);
  if (variant === "no-expiry-index") db.exec("DROP INDEX sponsorships_open_by_expiry");
  db.exec("insert into projects values ('p','p',0); insert into api_keys values ('k','p','h','pre',null,'active',0,null)");
  const b = db.prepare("BEGIN IMMEDIATE"), c = db.prepare("COMMIT");
  const sel = db.prepare("SELECT id, mode, max_cost_wei FROM sponsorships WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')");
  const ins = db.prepare(`INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id, strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, valid_until, valid_after, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?)`);
  t(variant, (i) => { b.run(); sel.get("local", "0xE", "0xS", String(i)); ins.run(randomUUID(), "local", "0xE", "v0.6", "0xS", String(i), "sponsor", "p", "k", null, null, null, null, "1000", 2e9, 1.7e9, 1, 1); c.run(); });
  db.close();
}
