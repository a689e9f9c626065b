// Finds the code blocks of a README that claim something, as a user reads them.
//
// Every ```js, ```javascript or ```ts block must follow a marker line, so none claims to
// run without being run:
//   <!-- snippet: run -->                       pasted into a .mjs file and run; must exit 0
//   <!-- snippet: run, expect: Hello, world --> ... and print that text
//   <!-- snippet: check -->                     pasted into a .mjs file and syntax-checked
//                                               (it needs what a test cannot have: an OS
//                                               keyring, values you provisioned)
// Other blocks (```sh, plain ```) are shell or diagrams and are not extracted.
import { readFileSync } from "node:fs";

const MARKER = /^<!-- snippet: (run|check)(?:, expect: (.+?))? -->$/;
const CODE = new Set(["js", "javascript", "ts", "typescript"]);

/**
 * @typedef {{ line: number, mode: "run" | "check", expect: string | null, code: string }} Snippet
 * @param {string} file
 * @returns {Snippet[]}
 */
export function readmeSnippets(file) {
  const lines = readFileSync(file, "utf8").split("\n");
  /** @type {Snippet[]} */
  const snippets = [];
  for (let i = 0; i < lines.length; i += 1) {
    const fence = /^```(\w*)\s*$/.exec(lines[i] ?? "");
    if (fence === null) continue;
    const end = lines.findIndex((text, j) => j > i && text.trimEnd() === "```");
    if (end === -1) throw new Error(`${file}:${i + 1}: unclosed code block`);
    const language = fence[1] ?? "";
    if (CODE.has(language)) {
      const marker = MARKER.exec((lines[i - 1] ?? "").trim());
      if (marker === null) {
        throw new Error(`${file}:${i + 1}: a \`\`\`${language} block without <!-- snippet: run --> or <!-- snippet: check --> before it`);
      }
      const mode = marker[1] === "run" ? "run" : "check";
      snippets.push({ line: i + 1, mode, expect: marker[2] ?? null, code: `${lines.slice(i + 1, end).join("\n")}\n` });
    }
    i = end;
  }
  return snippets;
}
