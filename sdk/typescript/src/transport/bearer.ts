/** The bearer grammar and an opaque holder that never shows its value (C5). */
import { inspect } from "node:util";
import { CredentialError } from "../errors.js";

const BEARER = /^[\x21-\x7e]{32,256}$/;

/** Holds a validated bearer. `String()`, `JSON.stringify` and `util.inspect` never reveal it. */
export class Bearer {
  readonly #value: string;

  constructor(value: unknown) {
    if (typeof value !== "string" || !BEARER.test(value)) {
      // The value is never echoed, not even in part.
      throw new CredentialError("the bearer is malformed: it must be 32-256 visible ASCII characters", {
        reason: "BEARER_MALFORMED",
      });
    }
    this.#value = value;
  }

  /** The `authorization` header value for one call. */
  authorization(): string {
    return `Bearer ${this.#value}`;
  }

  toString(): string {
    return "Bearer(<redacted>)";
  }

  toJSON(): string {
    return "<redacted>";
  }

  [inspect.custom](): string {
    return "Bearer(<redacted>)";
  }
}
