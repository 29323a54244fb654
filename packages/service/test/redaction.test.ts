// Issue 46, item 4: upstream text (a bundler's error, a provider's rate-limit message) made fit for our log
// (loggedText) and for a client (the bundler's message, clientMessage) kept secrets the redaction did not know:
// a short one named as such (`key=…` under 24 characters), a URL without a scheme, and `user:password@host`.
// bundlerErrors.test.ts has the same through a real bundler stub and the service's log.
import { expect } from "chai";
import { clientMessage } from "../src/bundler/rejection.ts";
import { loggedText } from "../src/text/loggedText.ts";

/** Short secrets: what TOKEN_PATTERN (24 characters and more) never caught. */
const SHORT = ["s3cr3tK3y", "hunter2", "abc123xyz", "p4ss", "tok_9f8e"];

/** Upstream messages, each holding some of them, with what must stay readable. */
const CASES: { text: string; secrets: string[]; kept: string[] }[] = [
  { text: "over quota for apikey=s3cr3tK3y, retry later", secrets: ["s3cr3tK3y"], kept: ["over quota for apikey=", "retry later"] },
  { text: "POST rpc.internal.example/v3/s3cr3tK3y failed: 429", secrets: ["s3cr3tK3y", "/v3/"], kept: ["POST", "failed: 429"] },
  { text: "upstream 10.0.0.3:8545/?key=abc123xyz timed out", secrets: ["abc123xyz", "?key"], kept: ["timed out"] },
  { text: "cannot connect to admin:hunter2@db.internal:5432/app", secrets: ["hunter2", "admin:", "/app"], kept: ["cannot connect to"] },
  { text: "redis replica default:p4ss@cache.internal refused", secrets: ["p4ss", "default:"], kept: ["cache.internal refused"] },
  { text: 'bundler data {"apiKey":"tok_9f8e","paymaster":"0x9fa47A8D5435A5466cb484BBA6da42D451158B88"}', secrets: ["tok_9f8e"], kept: ['"apiKey":', "0x9fa47A8D5435A5466cb484BBA6da42D451158B88"] },
  { text: "sent Authorization: Bearer abc123xyz to the relay; password=\"hunter2\" db_token=p4ss&x=1", secrets: ["abc123xyz", "hunter2", "p4ss"], kept: ["Authorization: Bearer", "to the relay"] },
  { text: "localhost:4337/rpc?session_id=tok_9f8e gave 502", secrets: ["tok_9f8e"], kept: ["gave 502"] },
];

describe("upstream text: short secrets, URLs without a scheme and user:password@host are redacted (issue 46, item 4)", () => {
  it("loggedText keeps the host (and port), never the path, query, userinfo or a named secret", () => {
    for (const { text, secrets, kept } of CASES) {
      const logged = loggedText(text);
      for (const secret of secrets) expect(logged, `${text} -> ${logged}`).to.not.include(secret);
      for (const part of kept) expect(logged, `${text} -> ${logged}`).to.include(part);
    }
    expect(loggedText("POST rpc.internal.example/v3/s3cr3tK3y failed")).to.equal("POST rpc.internal.example/… failed");
    expect(loggedText("upstream 10.0.0.3:8545/?key=abc123xyz timed out")).to.equal("upstream 10.0.0.3:8545/… timed out");
    expect(loggedText("cannot connect to admin:hunter2@db.internal:5432/app")).to.equal("cannot connect to [redacted]@db.internal:5432/…");
    expect(loggedText("over quota for apikey=s3cr3tK3y, retry later")).to.equal("over quota for apikey=[redacted], retry later");
  });

  it("the client's copy of a bundler's message keeps none of them either", () => {
    for (const { text, secrets } of CASES) {
      const client = clientMessage(text);
      for (const secret of SHORT.filter((s) => secrets.includes(s))) expect(client, `${text} -> ${client}`).to.not.include(secret);
      // Every URL, with a scheme or not, is "[url]" (a bare host name without a path is no URL: "cache.internal" stays).
      expect(client, text).to.not.match(/rpc\.internal|db\.internal|10\.0\.0\.3|localhost/);
    }
    expect(clientMessage("POST rpc.internal.example/v3/s3cr3tK3y failed: AA21 didn't pay prefund")).to.equal("POST [url] failed: AA21 didn't pay prefund");
  });

  it("what is no secret stays: EntryPoint reasons, hex, addresses, numbers with dots, file paths, plain words", () => {
    for (const text of [
      "AA21 didn't pay prefund",
      "AA23 reverted: 0xdeadbeef (sender 0x9fa47A8D5435A5466cb484BBA6da42D451158B88)",
      "maxFeePerGas 1.5 gwei below 2.25 gwei (v0.7/v0.8 rules)",
      "at async Executor.send (/srv/bundler/dist/executor.js:210:17)",
      "basic validation failed for the token USDC: key rotation in 3.2.1",
      "contact ops@example.org for limits",
    ]) {
      expect(loggedText(text), text).to.equal(text);
    }
  });
});
