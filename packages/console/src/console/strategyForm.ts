// The strategy editor's form as plain strings, and the strategy document (what the admin API, the CLI's files
// and `apply` take) it stands for. Values go to the service as typed: the service validates them with the
// schema the CLI uses, so the editor shows the CLI's messages; nothing is second-guessed here.

export interface CapForm {
  maxWei: string;
  maxUsd: string;
  maxOps: string;
}

export interface StrategyForm {
  code: string;
  name: string;
  project: string;
  status: "enabled" | "disabled";
  /** Empty = every configured network. */
  networks: string[];
  /** datetime-local text, read as UTC; "" = open-ended. */
  validFrom: string;
  validUntil: string;
  senderAllowlist: string;
  senderDenylist: string;
  targets: { address: string; selectors: string }[];
  caps: { global: CapForm; daily: CapForm; perSender: CapForm; perOp: Omit<CapForm, "maxOps"> };
  gas: { maxVerificationGasLimit: string; maxCallGasLimit: string; maxPreVerificationGas: string };
  maxFeeMultiplierBps: string;
  /** "" = the configuration's bound (lowered to half the smallest maxOps cap). */
  maxOutstandingPerClientIp: string;
  /** "" = no rule; else the eip7702 rule's allow. */
  eip7702: "" | "allow" | "deny";
  delegates: string;
}

const cap = (): CapForm => ({ maxWei: "", maxUsd: "", maxOps: "" });

export function emptyForm(project = ""): StrategyForm {
  return {
    code: "",
    name: "",
    project,
    status: "enabled",
    networks: [],
    validFrom: "",
    validUntil: "",
    senderAllowlist: "",
    senderDenylist: "",
    targets: [],
    caps: { global: cap(), daily: cap(), perSender: cap(), perOp: { maxWei: "", maxUsd: "" } },
    gas: { maxVerificationGasLimit: "", maxCallGasLimit: "", maxPreVerificationGas: "" },
    maxFeeMultiplierBps: "",
    maxOutstandingPerClientIp: "",
    eip7702: "",
    delegates: "",
  };
}

const lines = (text: string) => text.split(/[\n,\s]+/).map((l) => l.trim()).filter(Boolean);
/** An integer as a number (the schema wants numbers there); anything else as typed, for the service to name. */
const integer = (text: string): number | string => (/^\d{1,15}$/.test(text.trim()) ? Number(text.trim()) : text.trim());

function utcSeconds(local: string): number | string {
  const ms = Date.parse(`${local}${local.length === 16 ? ":00" : ""}Z`);
  return Number.isNaN(ms) ? local : Math.floor(ms / 1000);
}

function utcLocal(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? "" : new Date(seconds * 1000).toISOString().slice(0, 16);
}

function capDoc(c: Partial<CapForm>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (c.maxWei?.trim()) out.maxWei = c.maxWei.trim();
  if (c.maxUsd?.trim()) out.maxUsd = c.maxUsd.trim();
  if (c.maxOps?.trim()) out.maxOps = integer(c.maxOps);
  return Object.keys(out).length ? out : undefined;
}

/** The strategy document of the form (create: with code and project; update: everything else, whole). */
export function toDocument(f: StrategyForm, isNew: boolean): Record<string, unknown> {
  const rules: Record<string, unknown> = {};
  if (f.senderAllowlist.trim()) rules.senderAllowlist = lines(f.senderAllowlist);
  if (f.senderDenylist.trim()) rules.senderDenylist = lines(f.senderDenylist);
  if (f.targets.length) {
    rules.targets = f.targets.map((t) => (t.selectors.trim() ? { address: t.address.trim(), selectors: lines(t.selectors) } : { address: t.address.trim() }));
  }
  const caps: Record<string, unknown> = {};
  for (const scope of ["global", "daily", "perSender", "perOp"] as const) {
    const c = capDoc(f.caps[scope]);
    if (c) caps[scope] = c;
  }
  if (Object.keys(caps).length) rules.caps = caps;
  const gas: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(f.gas)) if (v.trim()) gas[k] = v.trim();
  if (Object.keys(gas).length) rules.gasLimits = gas;
  if (f.maxFeeMultiplierBps.trim()) rules.maxFeeMultiplierBps = integer(f.maxFeeMultiplierBps);
  if (f.maxOutstandingPerClientIp.trim()) rules.maxOutstandingPerClientIp = integer(f.maxOutstandingPerClientIp);
  if (f.eip7702) rules.eip7702 = { allow: f.eip7702 === "allow", ...(f.delegates.trim() ? { delegates: lines(f.delegates) } : {}) };
  return {
    code: f.code.trim(),
    ...(f.name.trim() ? { name: f.name.trim() } : {}),
    ...(isNew ? { project: f.project } : {}),
    status: f.status,
    networks: f.networks.length ? f.networks : null,
    validFrom: f.validFrom ? utcSeconds(f.validFrom) : null,
    validUntil: f.validUntil ? utcSeconds(f.validUntil) : null,
    rules,
  };
}

const str = (v: unknown) => (v === undefined || v === null ? "" : String(v));
function capForm(c: any): CapForm {
  return { maxWei: str(c?.maxWei), maxUsd: str(c?.maxUsd), maxOps: str(c?.maxOps) };
}

/** A strategy (as the API shows it) or a document in the form (what the form cannot show is dropped). */
export function fromDocument(doc: any): StrategyForm {
  const r = doc?.rules ?? {};
  return {
    code: str(doc?.code),
    name: str(doc?.name),
    project: str(doc?.projectId ?? doc?.project),
    status: doc?.status === "disabled" ? "disabled" : "enabled",
    networks: Array.isArray(doc?.networks) ? doc.networks.map(String) : [],
    validFrom: typeof doc?.validFrom === "number" ? utcLocal(doc.validFrom) : "",
    validUntil: typeof doc?.validUntil === "number" ? utcLocal(doc.validUntil) : "",
    senderAllowlist: (r.senderAllowlist ?? []).join("\n"),
    senderDenylist: (r.senderDenylist ?? []).join("\n"),
    targets: (r.targets ?? []).map((t: any) => ({ address: str(t.address), selectors: (t.selectors ?? []).join(" ") })),
    caps: { global: capForm(r.caps?.global), daily: capForm(r.caps?.daily), perSender: capForm(r.caps?.perSender), perOp: { maxWei: str(r.caps?.perOp?.maxWei), maxUsd: str(r.caps?.perOp?.maxUsd) } },
    gas: { maxVerificationGasLimit: str(r.gasLimits?.maxVerificationGasLimit), maxCallGasLimit: str(r.gasLimits?.maxCallGasLimit), maxPreVerificationGas: str(r.gasLimits?.maxPreVerificationGas) },
    maxFeeMultiplierBps: str(r.maxFeeMultiplierBps),
    maxOutstandingPerClientIp: str(r.maxOutstandingPerClientIp),
    eip7702: r.eip7702 === undefined ? "" : r.eip7702.allow ? "allow" : "deny",
    delegates: (r.eip7702?.delegates ?? []).join("\n"),
  };
}

const LIST_FIELDS = ["rules.senderAllowlist", "rules.senderDenylist", "rules.eip7702.delegates", "networks"];

/**
 * The service's field issues by form field: list entries ("rules.senderAllowlist[3]") go to their list's box
 * with the entry named ("entry 4: …"); a target's selector goes to that target's selectors.
 */
export function errorsByField(issues: readonly { field: string; message: string }[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { field, message } of issues) {
    let key = field;
    let text = message;
    const list = LIST_FIELDS.find((l) => field.startsWith(`${l}[`));
    const selector = /^(rules\.targets\[\d+\]\.selectors)\[(\d+)\]$/.exec(field);
    if (list) {
      key = list;
      text = `entry ${Number(/\[(\d+)\]/.exec(field.slice(list.length))?.[1] ?? 0) + 1}: ${message}`;
    } else if (selector) {
      key = selector[1]!;
      text = `selector ${Number(selector[2]) + 1}: ${message}`;
    }
    out[key] = out[key] ? `${out[key]}; ${text}` : text;
  }
  return out;
}
