// The SDK under test: the repository's build (through the file: dependency), or the copy
// named by COLOSSUS_SDK_DIR (the mutation harness builds a mutated copy there).
import path from "node:path";
import { pathToFileURL } from "node:url";
import type * as SdkModule from "colossus-sdk";

const copy = process.env["COLOSSUS_SDK_DIR"];

export const sdk: typeof SdkModule =
  copy !== undefined && copy !== ""
    ? ((await import(pathToFileURL(path.join(copy, "dist/index.js")).href)) as typeof SdkModule)
    : await import("colossus-sdk");
