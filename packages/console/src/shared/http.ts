// One way to call the service's JSON endpoints from a page: the admin API (console/api.ts) and the public
// application endpoints (apply/main.tsx) both answer JSON, and refuse with {error: {code, message, issues?}}.

export interface FieldIssue {
  field: string;
  message: string;
}

/** A refusal of the service: its HTTP status (0: no answer), code, message and the fields it names. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues: readonly FieldIssue[];
  constructor(status: number, code: string, message: string, issues: readonly FieldIssue[] = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.issues = issues;
  }
}

/**
 * Sends `body` (as JSON, when given) to `url` and answers the JSON it gets back; a refusal, a service that did not
 * answer (`unreachable` is the message then) or an answer that is not JSON is an ApiError.
 */
export async function callJson<T>(url: string, init: { method: string; headers?: Record<string, string>; body?: unknown; unreachable: string }): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", ...init.headers };
  // Every write is JSON, with or without a body: the admin listener refuses other writes (415).
  if (init.body !== undefined || (init.method !== "GET" && init.method !== "HEAD")) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(url, { method: init.method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), credentials: "same-origin" });
  } catch {
    throw new ApiError(0, "NETWORK", init.unreachable);
  }
  const text = await response.text();
  let json: any;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    throw new ApiError(response.status, "BAD_ANSWER", `The service answered ${response.status} with something that is not JSON.`);
  }
  if (!response.ok) {
    const e = json?.error ?? {};
    throw new ApiError(response.status, e.code ?? "ERROR", e.message ?? `The service answered ${response.status}.`, e.issues ?? []);
  }
  return json as T;
}
