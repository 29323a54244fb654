/**
 * Malformed bodies against the v1 endpoint: deterministic pseudo-random mutations of a valid
 * pm_sponsorUserOperation request (truncations, type swaps, huge numbers, odd hex, deep nesting, unicode,
 * duplicate keys, byte flips, ...). Every answer must be a JSON envelope: a 4xx with a known reason, or a
 * 200 when the mutation happened to stay valid; never a 5xx, never a stack trace or "Error:" text. Then the
 * service still answers pm_supportEntrypoint correctly. On SQLite and PostgreSQL. Loopback only, bounded in count and time.
 */
import { expect } from "chai";
import { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS } from "@paymaster/shared";
import { METHODS } from "../src/methods/index.ts";
import { REASONS } from "../src/errors.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { COST_RE, ECHO_SPONSOR_PARAMS, echoSponsorMethod, startTestService, validUserOpV06, validUserOpV07, type TestService } from "./helpers/rpcService.ts";
import { prng } from "./helpers/prng.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const ODD_VALUES: readonly Json[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -0,
  Number.MAX_SAFE_INTEGER + 2,
  "",
  "0x",
  "0x0",
  "0xzz",
  "0xabc",
  "abc",
  "0X00",
  " 0x00",
  "0x00 ",
  `0x${"f".repeat(65)}`,
  `0x${"f".repeat(200)}`,
  `0x${"ab".repeat(60_000)}`,
  "\u0000",
  "\ud800",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓ \u202e",
  "__proto__",
  "constructor",
  [],
  [null],
  {},
  { __proto__: null } as unknown as Json,
  { length: 2 },
  ["0x00", "0x01"],
];

const UNICODE = ["é", "✓", "\u200b", "\u202e", "\ud83d\ude00", "\ud800", "\udfff", "\u0000", "\\u0000", "\uffff", "ﬀ", "İ"];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

/** Every path (keys and indices) into a JSON value. */
function paths(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) value.forEach((item, index) => out.push(...paths(item, [...prefix, index])));
  else if (value !== null && typeof value === "object") for (const [key, item] of Object.entries(value)) out.push(...paths(item, [...prefix, key]));
  return out;
}

function clone(value: Json): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

/** Sets (or with `remove`, deletes) the value at `path`; the root path replaces the whole value. */
function setAt(root: Json, path: (string | number)[], value: Json | undefined): Json {
  if (path.length === 0) return value ?? null;
  let node = root as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) node = node[key] as unknown as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  } else {
    node[last] = value;
  }
  return root;
}

function getAt(root: Json, path: (string | number)[]): Json {
  let node: Json = root;
  for (const key of path) node = (node as Record<string | number, Json>)[key]!;
  return node;
}

function nest(depth: number, inner: string): string {
  return "[".repeat(depth) + inner + "]".repeat(depth);
}

/** One malformed body from the valid request, chosen by `random`. */
function mutate(random: () => number, valid: Json): { kind: string; body: string | Buffer } {
  const text = JSON.stringify(valid);
  const allPaths = paths(valid);
  const somePath = (): (string | number)[] => pick(random, allPaths);
  const kind = pick(random, [
    "truncate",
    "typeSwap",
    "typeSwap",
    "remove",
    "addKey",
    "hugeNumber",
    "oddHex",
    "deepNesting",
    "unicode",
    "duplicateKey",
    "byteFlip",
    "badUtf8",
    "wrapper",
    "stringEdit",
  ] as const);
  switch (kind) {
    case "truncate":
      return { kind, body: text.slice(0, Math.floor(random() * text.length)) };
    case "typeSwap": {
      const root = clone(valid);
      return { kind, body: JSON.stringify(setAt(root, somePath(), pick(random, ODD_VALUES))) };
    }
    case "remove": {
      const root = clone(valid);
      const path = somePath();
      return { kind, body: JSON.stringify(path.length === 0 ? {} : setAt(root, path, undefined)) };
    }
    case "addKey": {
      const root = clone(valid);
      const objects = allPaths.filter((path) => {
        const node = getAt(root, path);
        return node !== null && typeof node === "object" && !Array.isArray(node);
      });
      const path = pick(random, objects);
      const key = pick(random, ["x", "__proto__", "constructor", "ID", "paymaster", "Sender", "factory", "version", "🔑", "k".repeat(300)]);
      const node = getAt(root, path) as Record<string, Json>;
      Object.defineProperty(node, key, { value: pick(random, ODD_VALUES), enumerable: true, configurable: true, writable: true });
      return { kind, body: JSON.stringify(root) };
    }
    case "hugeNumber": {
      const numbers = ["1e400", "-1e400", "123456789012345678901234567890", "1".repeat(5000), "0.0000000000000000000001", "-0", "1E+2"];
      const path = somePath();
      if (path.length === 0) return { kind, body: pick(random, numbers) };
      const marker = "__HUGE__";
      const root = setAt(clone(valid), path, marker);
      return { kind, body: JSON.stringify(root).replace(`"${marker}"`, pick(random, numbers)) };
    }
    case "oddHex": {
      const hexPaths = allPaths.filter((path) => {
        const node = getAt(valid, path);
        return typeof node === "string" && node.startsWith("0x");
      });
      const path = pick(random, hexPaths);
      const value = getAt(valid, path) as string;
      const variants = [value.slice(0, -1), value.slice(2), `${value}g`, `0x${value.slice(3)}`, value.toUpperCase(), `${value}${"0".repeat(1 + Math.floor(random() * 200))}`, `0x${"f".repeat(64 + Math.floor(random() * 10))}`];
      return { kind, body: JSON.stringify(setAt(clone(valid), path, pick(random, variants))) };
    }
    case "deepNesting": {
      const depth = pick(random, [10, 1000, 20_000, 100_000]);
      const where = random();
      if (where < 0.33) return { kind, body: nest(depth, "1") };
      const marker = "__DEEP__";
      const path = somePath();
      const root = setAt(clone(valid), path.length === 0 ? ["params"] : path, marker);
      return { kind, body: JSON.stringify(root).replace(`"${marker}"`, where < 0.66 ? nest(depth, "") : "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)) };
    }
    case "unicode": {
      const position = Math.floor(random() * text.length);
      return { kind, body: text.slice(0, position) + pick(random, UNICODE) + text.slice(position) };
    }
    case "duplicateKey": {
      const duplicates = ['"id":"x",', '"method":"pm_supportEntrypoint",', '"params":5,', '"jsonrpc":"1.0",', '"method":"test_echoSponsorParams",'];
      const position = text.indexOf("{") + 1;
      const inner = text.indexOf('"sender"');
      const atUserOp = random() < 0.5 && inner > 0;
      const insert = atUserOp ? pick(random, ['"nonce":"0xzz",', '"sender":5,', '"callData":"0x",']) : pick(random, duplicates);
      const at = atUserOp ? inner : position;
      // Before or after the original key: JSON.parse keeps the last one.
      return { kind, body: random() < 0.5 ? text.slice(0, at) + insert + text.slice(at) : text.replace(/}$/, `,${insert.replace(/,$/, "")}}`) };
    }
    case "byteFlip": {
      const bytes = Buffer.from(text, "utf8");
      const flips = 1 + Math.floor(random() * 4);
      for (let i = 0; i < flips; i++) {
        const index = Math.floor(random() * bytes.length);
        bytes[index] = Math.floor(random() * 256);
      }
      return { kind, body: bytes };
    }
    case "badUtf8": {
      const bytes = Buffer.from(text, "utf8");
      const index = Math.floor(random() * bytes.length);
      return { kind, body: Buffer.concat([bytes.subarray(0, index), Buffer.from(pick(random, [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]])), bytes.subarray(index)]) };
    }
    case "wrapper": {
      const wrappers = [`[${text}]`, `[${text},${text}]`, `"${text.replace(/"/g, '\\"')}"`, `{"request":${text}}`, `${text}${text}`, `${text} trailing`, `\ufeff${text}`, "null", "[]", "{}"];
      return { kind, body: pick(random, wrappers) };
    }
    case "stringEdit": {
      const stringPaths = allPaths.filter((path) => typeof getAt(valid, path) === "string");
      const path = pick(random, stringPaths);
      const value = getAt(valid, path) as string;
      const edits = [value + pick(random, UNICODE), pick(random, UNICODE) + value, "", " ".repeat(10), value.repeat(3), "%00", "\n", "\\"];
      return { kind, body: JSON.stringify(setAt(clone(valid), path, pick(random, edits))) };
    }
  }
}

const KNOWN_REASONS = new Set(Object.keys(REASONS));
const COUNT = 400;
const CONCURRENCY = 8;

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`fuzz: malformed v1 bodies (${backend})`, function () {
    this.timeout(120_000);
    let t: TestService;
    let database: TestDatabase | undefined;

    before(async () => {
      if (backend === "PostgreSQL") database = await createTestDatabase("paymaster_fuzz_v1");
      t = await startTestService({ methods: [...METHODS, echoSponsorMethod], ...(database ? { databaseUrl: database.url } : {}) });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    it(`${COUNT} mutations of a valid sponsor request all get a clean 4xx (or 200) JSON envelope`, async () => {
      const random = prng(0x5eed_4337);
      const templates: Json[] = [
        { id: 1, jsonrpc: "2.0", method: ECHO_SPONSOR_PARAMS, params: [validUserOpV06(), {}] },
        { id: 2, jsonrpc: "2.0", method: ECHO_SPONSOR_PARAMS, params: [validUserOpV07(), { version: "v0.7", token: "USDC" }] },
        { id: 3, jsonrpc: "2.0", method: ECHO_SPONSOR_PARAMS, params: [{ ...validUserOpV06(), initCode: `0x${"ab".repeat(40)}` }, { strategy_code: "promo" }] },
      ];
      const cases = Array.from({ length: COUNT }, () => mutate(random, pick(random, templates)));
      const started = Date.now();
      const statuses = new Map<number, number>();
      const kinds = new Map<string, number>();
      const failures: string[] = [];

      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < cases.length) {
          const index = next++;
          const { kind, body } = cases[index]!;
          kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
          const answer = await t.post(typeof body === "string" ? body : new Uint8Array(body));
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const where = `#${index} ${kind}: ${answer.status} ${answer.text.slice(0, 300)}`;
          if (answer.status >= 500 || (answer.status !== 200 && (answer.status < 400 || answer.status >= 500))) failures.push(`status ${where}`);
          if (/Error:|\n\s+at |SyntaxError|TypeError|RangeError/.test(answer.text)) failures.push(`internal text ${where}`);
          const json = answer.json;
          if (json === undefined || Object.keys(json).join() !== "code,message,data,cost") {
            failures.push(`envelope ${where}`);
            continue;
          }
          if (json.code !== answer.status || !COST_RE.test(json.cost)) failures.push(`code/cost ${where}`);
          if (answer.status !== 200 && !KNOWN_REASONS.has(json.data?.reason)) failures.push(`reason ${where}`);
          if (answer.status !== 200 && json.data?.reason === "INTERNAL_ERROR") failures.push(`internal ${where}`);
          if (answer.text.length > 8_000) failures.push(`answer too long (${answer.text.length}) ${where.slice(0, 120)}`);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));

      expect(failures, failures.slice(0, 10).join("\n")).to.deep.equal([]);
      const errors = [...statuses].filter(([status]) => status !== 200).reduce((sum, [, count]) => sum + count, 0);
      expect(errors, JSON.stringify([...statuses])).to.be.greaterThan(COUNT / 2);
      expect(kinds.size).to.be.greaterThan(10);
      expect(Date.now() - started).to.be.below(60_000);
    });

    it("still answers pm_supportEntrypoint correctly afterwards", async () => {
      const answer = await t.call("pm_supportEntrypoint");
      expect(answer.status).to.equal(200);
      expect(answer.json.data).to.deep.equal([ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS]);
      const health = await fetch(`${t.url}/health`);
      expect(health.status).to.equal(200);
    });
  });
}
