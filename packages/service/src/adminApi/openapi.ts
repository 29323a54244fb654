/**
 * The OpenAPI 3.1 document of the admin API, made from the route table (served at /admin/v1/openapi.json). Each
 * operation says the role it needs in `x-required-role` (src/admin/roles.ts).
 */
import { requiredRoleOf, ROLES, type Role } from "../admin/roles.ts";
import { ADMIN_ROUTES } from "./routes.ts";

export const ADMIN_API_PREFIX = "/admin/v1";
export const OPENAPI_PATH = `${ADMIN_API_PREFIX}/openapi.json`;

/** The console's session routes (app.ts, session.ts). */
export const SESSION_PATHS = {
  signIn: `${ADMIN_API_PREFIX}/session`,
  current: `${ADMIN_API_PREFIX}/session`,
  signOut: `${ADMIN_API_PREFIX}/session/end`,
} as const;

const SESSION_OPERATIONS: { method: "get" | "post"; path: string; summary: string; body?: string; open?: boolean; role?: Role }[] = [
  {
    method: "post",
    path: SESSION_PATHS.signIn,
    summary: "Console sign-in: sets the session cookie (HttpOnly, SameSite=Strict); answers {name, expiresAt, csrf}",
    body: "{token}",
    open: true,
  },
  {
    method: "get",
    path: SESSION_PATHS.current,
    summary:
      "Who is signed in {name, role, expiresAt, csrf, permitted} (csrf: the X-Paymaster-CSRF value mutations must carry; permitted: every \"METHOD /path\" the role may call)",
    role: "viewer",
  },
  { method: "post", path: SESSION_PATHS.signOut, summary: "Console sign-out: clears the session cookie", role: "viewer" },
];

const ERROR = {
  description:
    "An error: {error: {code, message, issues?, requiredRole?}} (code NOT_FOUND 404, INVALID_INPUT 400, CONFLICT 409, UNAUTHORIZED 401, FORBIDDEN 403, BODY_TOO_LARGE 413, RATE_LIMITED 429, INTERNAL 500, UNAVAILABLE 503); issues: [{field, message}] per wrong field; requiredRole: the role a FORBIDDEN call needs",
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
};

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ADMIN_ROUTES) {
    const path = ADMIN_API_PREFIX + route.path.replace(/:(\w+)/g, "{$1}");
    const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    const queryParams = (route.query ?? []).map((name) => ({ name, in: "query", required: false, schema: { type: "string" } }));
    paths[path] ??= {};
    paths[path][route.method] = {
      summary: route.summary,
      "x-required-role": requiredRoleOf(route.operation),
      operationId: `${route.method}${route.path.replace(/[/:](\w)/g, (_, c: string) => c.toUpperCase())}`,
      parameters: [...pathParams, ...queryParams],
      ...(route.body ? { requestBody: { required: true, description: route.body, content: { "application/json": { schema: { type: "object" } } } } } : {}),
      responses: {
        [String(route.status ?? 200)]: { description: "OK", content: Object.fromEntries(["application/json", ...(route.files ?? [])].map((type) => [type, { schema: {} }])) },
        default: ERROR,
      },
    };
  }
  for (const op of SESSION_OPERATIONS) {
    paths[op.path] ??= {};
    paths[op.path]![op.method] = {
      summary: op.summary,
      operationId: op.method + op.path.replace(ADMIN_API_PREFIX, "").replace(/\/(\w)/g, (_, c: string) => c.toUpperCase()),
      ...(op.open ? { security: [] } : {}),
      ...(op.role ? { "x-required-role": op.role } : {}),
      ...(op.body ? { requestBody: { required: true, description: op.body, content: { "application/json": { schema: { type: "object" } } } } } : {}),
      responses: { "200": { description: "OK", content: { "application/json": { schema: {} } } }, default: ERROR },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Paymaster admin API", version: "1", description: "Administration of projects, API keys, strategies, gas tanks and sponsorships. See docs/admin-api.md." },
    security: [{ bearer: [] }, { consoleSession: [] }],
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer" },
        consoleSession: { type: "apiKey", in: "cookie", name: "pm_console", description: "The console's session (POST /admin/v1/session); mutations also need the X-Paymaster-CSRF header" },
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          properties: {
            error: {
              type: "object",
              required: ["code", "message"],
              properties: {
                code: { type: "string" },
                message: { type: "string" },
                issues: { type: "array", items: { type: "object", properties: { field: { type: "string" }, message: { type: "string" } } } },
                requiredRole: { type: "string", enum: [...ROLES] },
              },
            },
          },
        },
      },
    },
    paths,
  };
}
