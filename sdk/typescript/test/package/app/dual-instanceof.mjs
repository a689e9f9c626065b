// One process, both copies of colossus-sdk (the ESM and the CommonJS build), as an app gets
// when an ESM module and a CommonJS dependency both load it. For every pair of exported error
// classes, an error constructed (and thrown) by one copy must answer `instanceof` on the
// other copy's class exactly as it does on its own copy's class; both directions.
// Prints one line per mismatch and exits 1 if there is any.
import { createRequire } from "node:module";
import * as esm from "colossus-sdk";

const cjs = createRequire(import.meta.url)("colossus-sdk");
if (cjs.ColossusError === esm.ColossusError) throw new Error("the two copies are one: the test would prove nothing");

const names = Object.keys(esm).filter(
  (name) =>
    typeof esm[name] === "function" &&
    (esm[name] === esm.ColossusError || Object.prototype.isPrototypeOf.call(esm.ColossusError.prototype, esm[name].prototype)),
);
const failures = [];
let checks = 0;
function expect(label, actual, expected) {
  checks += 1;
  if (actual !== expected) failures.push(`${label}: ${String(actual)}, expected ${String(expected)}`);
}
function thrownBy(copy, name) {
  try {
    throw new copy[name]("from the other copy", { code: "NOT_FOUND", reason: "RUN_NOT_FOUND" });
  } catch (error) {
    return error;
  }
}

for (const thrown of names) {
  for (const checked of names) {
    // The truth, from the prototype chain of one copy alone.
    const related = esm[thrown] === esm[checked] || Object.prototype.isPrototypeOf.call(esm[checked].prototype, esm[thrown].prototype);
    expect(`cjs ${thrown} instanceof esm ${checked}`, thrownBy(cjs, thrown) instanceof esm[checked], related);
    expect(`esm ${thrown} instanceof cjs ${checked}`, thrownBy(esm, thrown) instanceof cjs[checked], related);
    expect(`esm ${thrown} instanceof esm ${checked}`, thrownBy(esm, thrown) instanceof esm[checked], related);
  }
}

// A subclass of the app's own keeps its SDK ancestors' brands and adds none of its own.
class MissingThing extends cjs.NotFoundError {}
const mine = new MissingThing("mine");
expect("app subclass of cjs NotFoundError instanceof esm NotFoundError", mine instanceof esm.NotFoundError, true);
expect("app subclass of cjs NotFoundError instanceof esm ApiError", mine instanceof esm.ApiError, true);
expect("app subclass of cjs NotFoundError instanceof esm AuthenticationError", mine instanceof esm.AuthenticationError, false);
expect("app subclass instanceof itself", mine instanceof MissingThing, true);
expect("esm NotFoundError instanceof app subclass", new esm.NotFoundError("x") instanceof MissingThing, false);
for (const value of [new Error("plain"), { name: "NotFoundError" }, null, "NotFoundError"]) {
  expect(`${String(value)} instanceof esm ColossusError`, value instanceof esm.ColossusError, false);
  expect(`${String(value)} instanceof esm NotFoundError`, value instanceof esm.NotFoundError, false);
}

// An error the CommonJS copy really raised (a relative discovery folder), checked against the ESM classes.
const refused = await cjs.Client.connect({
  publicApiDir: "relative/dir",
  expectedInstanceId: "wkr_x",
  expectedCertificateSha256: "0".repeat(64),
  credentials: new cjs.InMemoryCredentialProvider("x".repeat(40)),
}).then(() => null, (error) => error);
expect("Client.connect refusal (cjs) instanceof esm DescriptorError", refused instanceof esm.DescriptorError, true);
expect("Client.connect refusal (cjs) instanceof esm TrustError", refused instanceof esm.TrustError, true);
expect("Client.connect refusal (cjs) instanceof esm ApiError", refused instanceof esm.ApiError, false);

for (const failure of failures) console.log(`MISMATCH ${failure}`);
console.log(`${names.length} error classes, ${checks} checks, ${failures.length} mismatches`);
process.exitCode = failures.length === 0 && names.length >= 29 ? 0 : 1;
