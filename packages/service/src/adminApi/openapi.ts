/** The OpenAPI 3.1 document of the admin API, made from the route table (served at /admin/v1/openapi.json). */
import { ADMIN_ROUTES } from "./routes.ts";

export const ADMIN_API_PREFIX = "/admin/v1";
export const OPENAPI_PATH = `${ADMIN_API_PREFIX}/openapi.json`;

const ERROR = {
  description: "An error: {error: {code, message}} (code NOT_FOUND 404, INVALID_INPUT 400, CONFLICT 409, UNAUTHORIZED 401, BODY_TOO_LARGE 413, INTERNAL 500)",
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
      operationId: `${route.method}${route.path.replace(/[/:](\w)/g, (_, c: string) => c.toUpperCase())}`,
      parameters: [...pathParams, ...queryParams],
      ...(route.body ? { requestBody: { required: true, description: route.body, content: { "application/json": { schema: { type: "object" } } } } } : {}),
      responses: { [String(route.status ?? 200)]: { description: "OK", content: { "application/json": { schema: {} } } }, default: ERROR },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Paymaster admin API", version: "1", description: "Administration of projects, API keys, strategies, gas tanks and sponsorships. See docs/admin-api.md." },
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          properties: { error: { type: "object", required: ["code", "message"], properties: { code: { type: "string" }, message: { type: "string" } } } },
        },
      },
    },
    paths,
  };
}
