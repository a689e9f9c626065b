import { defineConfig } from "tsup";

// One ESM and one CommonJS bundle of the hand-written SDK plus its generated bindings,
// each with matching declarations (.d.ts / .d.cts). Dependencies stay external.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
  treeshake: true,
  splitting: false,
});
