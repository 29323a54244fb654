import { DatabaseSync } from "node:sqlite";
import { SQLITE_MIGRATIONS } from "../src/store/migrations.ts";
const db = new DatabaseSync(":memory:");
db.exec(SQLITE_MIGRATIONS[0]!.sql); db.exec("DROP INDEX sponsorships_open_by_expiry");
db.exec("insert into projects values ('p','p',0); insert into api_keys values ('k','p','h','pre',null,'active',0,null)");
const ins = db.prepare(`INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id, max_cost_wei, valid_until, valid_after, status, created_at, updated_at) VALUES (?, 'local', '0xE', 'v0.6', '0xS', ?, 'sponsor', 'p', 'k', '1', ?, 0, ?, 0, 0)`);
db.exec("BEGIN"); for (let i = 0; i < 20000; i++) ins.run(`id${i}`, String(i), 1000 + i, i < 19900 ? "released" : "signed"); db.exec("COMMIT"); db.exec("ANALYZE");
for (const q of ["SELECT id FROM sponsorships WHERE status IN ('reserved','signed') AND valid_until < ?", "SELECT id FROM sponsorships WHERE status IN ('reserved','signed') AND valid_until < ? ORDER BY valid_until LIMIT 100"])
  console.log(q, db.prepare("EXPLAIN QUERY PLAN " + q).all(0).map((r) => r.detail));
