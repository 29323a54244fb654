// Builds the two pages into dist/: dist/console (the operator console, served on the admin listener) and
// dist/apply (the public key application page). esbuild bundles each entry (Preact, TSX) and its CSS into
// content-hashed files; the HTML is written here with the hashed names. Prints each file's gzipped size.
import { rmSync, mkdirSync, writeFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = path.dirname(new URL(import.meta.url).pathname);
const dist = path.join(here, "dist");
rmSync(dist, { recursive: true, force: true });

const SITES = [
  { name: "console", entry: "src/console/main.tsx", title: "Paymaster console" },
  { name: "apply", entry: "src/apply/main.tsx", title: "Apply for a paymaster API key" },
];

const html = (title, script, style) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="assets/${style}">
<script type="module" src="assets/${script}"></script>
</head>
<body>
<div id="app"><noscript>This page needs JavaScript.</noscript></div>
</body>
</html>
`;

const sizes = [];
for (const site of SITES) {
  const out = path.join(dist, site.name, "assets");
  mkdirSync(out, { recursive: true });
  const result = await build({
    entryPoints: { [site.name]: path.join(here, site.entry) },
    bundle: true,
    minify: true,
    format: "esm",
    target: ["es2020", "chrome100", "firefox100", "safari15"],
    jsx: "automatic",
    jsxImportSource: "preact",
    outdir: out,
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => path.basename(p));
  const script = outputs.find((f) => f.endsWith(".js"));
  const style = outputs.find((f) => f.endsWith(".css"));
  if (!script || !style) throw new Error(`${site.name}: expected a script and a stylesheet, got ${outputs.join(", ")}`);
  writeFileSync(path.join(dist, site.name, "index.html"), html(site.title, script, style));
  for (const f of [script, style]) {
    const bytes = readFileSync(path.join(out, f));
    sizes.push({ file: `${site.name}/assets/${f}`, bytes: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length });
  }
}
for (const s of sizes) console.log(`${s.file.padEnd(44)} ${String(s.bytes).padStart(7)} B  ${String(s.gzip).padStart(6)} B gzip`);
for (const site of SITES) {
  const total = sizes.filter((s) => s.file.startsWith(`${site.name}/`)).reduce((n, s) => n + s.gzip, 0);
  console.log(`${site.name}: ${total} B gzipped in all`);
}
