import fs from "node:fs"; import os from "node:os"; import path from "node:path";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pm-w-")); const fd = fs.openSync(path.join(dir, "f"), "w"); const buf = Buffer.alloc(4096);
const N = 20000; const t0 = process.hrtime.bigint(); for (let i = 0; i < N; i++) fs.writeSync(fd, buf, 0, 4096, (i % 1000) * 4096); console.log("pwrite 4k", Number(process.hrtime.bigint() - t0) / 1000 / N, "µs");
