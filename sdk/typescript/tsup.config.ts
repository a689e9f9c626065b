import { defineConfig } from "tsup";

// One ESM and one CommonJS bundle per entry of the hand-written SDK plus its generated bindings,
// each with matching declarations (.d.ts / .d.cts). Dependencies stay external.
// TSUP_SKIP_DTS=1 bundles without declarations (the mutation harness: a planted bug may not type-check).
export default defineConfig({
  // The SDK, and `colossus-sdk/testing` (the fake worker for applications' own tests).
  entry: { index: "src/index.ts", testing: "src/testing/index.ts" },
  format: ["esm", "cjs"],
  dts: process.env["TSUP_SKIP_DTS"] !== "1",
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
  treeshake: true,
  splitting: false,
});
