/**
 * API keys: `pm_` and 32 random bytes (base64url), shown once when created; the store keeps their SHA-256 and a
 * short prefix to recognise them by.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { nowSeconds } from "./validation.ts";
import type { ApiKey } from "./types.ts";

/** API keys: `pm_` + 32 random bytes, base64url (43 chars): 46 chars in all. */
const API_KEY_PREFIX = "pm_";

const API_KEY_RANDOM_BYTES = 32;

/** How many leading characters of the plaintext are kept to recognise a key ("pm_" + 7). */
const API_KEY_DISPLAY_PREFIX_LENGTH = 10;

/** Longer inputs are not keys: answer without hashing them. */
const API_KEY_MAX_LENGTH = 256;

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** A fresh key: the record, the plaintext (returned once) and the hash that is stored in its place. */
export function newApiKey(projectId: string, label?: string): { apiKey: ApiKey; plaintext: string; keyHash: string } {
  const plaintext = API_KEY_PREFIX + randomBytes(API_KEY_RANDOM_BYTES).toString("base64url");
  const apiKey: ApiKey = {
    id: randomUUID(),
    projectId,
    prefix: plaintext.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH),
    label: label ?? null,
    status: "active",
    createdAt: nowSeconds(),
    revokedAt: null,
    allowedOrigins: null,
    allowedIps: null,
  };
  return { apiKey, plaintext, keyHash: sha256Hex(plaintext) };
}

/** The hash to look a presented key up by; undefined for what cannot be a key (answered without hashing). */
export function apiKeyLookupHash(plaintext: unknown): string | undefined {
  if (typeof plaintext !== "string" || plaintext.length === 0 || plaintext.length > API_KEY_MAX_LENGTH) return undefined;
  return sha256Hex(plaintext);
}
