// The console's one door to the service: the admin API (/admin/v1, relative to /console/ so a proxy may mount
// both under a prefix). The session cookie goes along by itself (same origin, HttpOnly: no script sees it);
// every change also carries the session's CSRF value in X-Paymaster-CSRF. The session says the role it has and
// every route that role may call (`permitted`): the pages show an action only when `can` says so (the service
// refuses the rest with 403 anyway).
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { ApiError, callJson } from "../shared/http.ts";

export { ApiError } from "../shared/http.ts";

const BASE = "../admin/v1";
/** The admin API's path prefix, as `permitted` names its routes. */
const API_PATH = "/admin/v1";

export type Role = "viewer" | "operator" | "admin";

export interface Session {
  name: string;
  role: Role;
  expiresAt: number;
  csrf: string;
  /** Every route this session may call: "METHOD /admin/v1/path/:param". */
  permitted: string[];
}

// ---- the session, shared by every page

let session: Session | null | undefined; // undefined: not known yet
const listeners = new Set<() => void>();
function setSession(next: Session | null): void {
  session = next;
  for (const l of listeners) l();
}

export function useSession(): Session | null | undefined {
  const [, tick] = useState(0);
  useEffect(() => {
    const l = () => tick((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return session;
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (method !== "GET" && session) headers["x-paymaster-csrf"] = session.csrf;
  try {
    return await callJson<T>(`${BASE}${path}`, { method, headers, body, unreachable: "The service did not answer: check that it is running and reachable, then try again." });
  } catch (error) {
    // A session that ended (expired, token removed): back to the sign-in page.
    if (error instanceof ApiError && error.status === 401 && path !== "/session") setSession(null);
    throw error;
  }
}

export const api = {
  get: <T = any>(path: string) => request<T>("GET", path),
  post: <T = any>(path: string, body?: unknown) => request<T>("POST", path, body ?? {}),
  patch: <T = any>(path: string, body: unknown) => request<T>("PATCH", path, body),
};

/** A permitted route ("POST /admin/v1/keys/:id/revoke") as a pattern of the requests it allows. */
const patterns = new Map<string, RegExp>();
function routePattern(route: string): RegExp {
  let found = patterns.get(route);
  if (!found) {
    const escaped = route.split("/").map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    found = new RegExp(`^${escaped.join("/")}$`);
    patterns.set(route, found);
  }
  return found;
}

/**
 * Whether the signed-in session may call `method` on `path` — the path exactly as the page calls it
 * (`/keys/${id}/revoke`): what decides whether the page shows an action at all.
 */
export function can(method: "POST" | "PATCH", path: string): boolean {
  const wanted = `${method} ${API_PATH}${path.split("?")[0]}`;
  return (session?.permitted ?? []).some((route) => routePattern(route).test(wanted));
}

/** Asks who is signed in (the cookie decides); null when nobody. */
export async function loadSession(): Promise<void> {
  try {
    const s = await request<Session & { csrf: string | null }>("GET", "/session");
    setSession(s.csrf ? s : null);
  } catch {
    setSession(null);
  }
}

export async function signIn(token: string): Promise<void> {
  setSession(await request<Session>("POST", "/session", { token }));
}

export async function signOut(): Promise<void> {
  try {
    await request("POST", "/session/end", {});
  } finally {
    setSession(null);
  }
}

/** Query text from an object, leaving out empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const text = q.toString();
  return text === "" ? "" : `?${text}`;
}

// ---- whether the page's data is still loading: <main aria-busy> (assistive technology waits for it, and so
// do the browser tests). Set from layout effects, in the same task as the render that starts or ends a load.

const loadingNow = new Set<object>();
function markLoading(who: object, loading: boolean): void {
  if (loading) loadingNow.add(who);
  else loadingNow.delete(who);
  document.getElementById("main")?.setAttribute("aria-busy", String(loadingNow.size > 0));
}

/**
 * Loads `path` (again when `deps` change or `reload()` is called): {data, error, loading, reload}. A reload keeps
 * the data on screen until the new answer; a new path or new deps do not (the old answer is another project's,
 * another tab's, another period's: showing it while the new one loads would be wrong). `reload()` resolves once
 * the new answer is in place, so an action can stay busy until the page shows its effect.
 */
export function useApi<T = any>(path: string | null, deps: unknown[] = []) {
  const key = JSON.stringify([path, ...deps]);
  const [round, setRound] = useState(0);
  const [answer, setAnswer] = useState<{ key: string; round: number; data?: T; error?: ApiError } | null>(null);
  const reloads = useRef<(() => void)[]>([]);
  const settleReloads = () => {
    for (const done of reloads.current.splice(0)) done();
  };
  useEffect(() => {
    if (path === null) return settleReloads();
    let live = true;
    const done = (a: { key: string; round: number; data?: T; error?: ApiError }) => {
      if (!live) return;
      setAnswer(a);
      settleReloads();
    };
    api.get<T>(path).then(
      (data) => done({ key, round, data }),
      (error: ApiError) => done({ key, round, error }),
    );
    return () => {
      live = false;
    };
  }, [key, round]);
  useEffect(() => settleReloads, []); // unmounted: nothing left to wait for
  const fresh = answer?.key === key; // an answer for this path (perhaps of an earlier round: a reload keeps it shown)
  const loading = path !== null && !(fresh && answer!.round === round);
  const self = useRef({}).current;
  useLayoutEffect(() => markLoading(self, loading), [loading]);
  useLayoutEffect(() => () => markLoading(self, false), []);
  return {
    data: fresh ? answer!.data : undefined,
    error: fresh ? answer!.error : undefined,
    loading,
    reload: () =>
      new Promise<void>((resolve) => {
        reloads.current.push(resolve);
        setRound((n) => n + 1);
      }),
  };
}
