/**
 * Credential providers (C8). The SDK asks its provider for the bearer only after every
 * trust check passed, and wraps the answer in an opaque {@link Bearer} at once.
 */
import { inspect } from "node:util";
import { CredentialError } from "./errors.js";
import { Bearer } from "./transport/bearer.js";

/** Where a bearer comes from. `getBearer` may be async; it is called once per connect. */
export interface CredentialProvider {
  /** Returns the bearer, asked for once per connection after the server was verified. */
  getBearer(signal?: AbortSignal): string | Promise<string>;
}

/** Holds a bearer in memory (tests, sidecars, or values your own secret store handed over). */
export class InMemoryCredentialProvider implements CredentialProvider {
  readonly #bearer: string;

  constructor(bearer: string) {
    // Checked when loaded (after the trust checks), like every provider's answer.
    this.#bearer = bearer;
  }

  /** Returns the bearer given to the constructor. */
  getBearer(): string {
    return this.#bearer;
  }

  toString(): string {
    return "InMemoryCredentialProvider(<redacted>)";
  }

  /** Redacted: the bearer never reaches a log. */
  toJSON(): string {
    return "InMemoryCredentialProvider(<redacted>)";
  }

  /** Redacted: the bearer never reaches a log. */
  [inspect.custom](): string {
    return "InMemoryCredentialProvider(<redacted>)";
  }
}

interface KeyringEntry {
  getPassword(): string | null | undefined;
}
interface KeyringModule {
  Entry: new (service: string, account: string) => KeyringEntry;
}

/**
 * Reads the bearer from the OS credential store (macOS Keychain, Windows Credential
 * Manager, Secret Service on Linux) through the optional `@napi-rs/keyring` package,
 * loaded only when this provider is first asked.
 */
export class KeyringCredentialProvider implements CredentialProvider {
  constructor(
    readonly service: string,
    readonly account: string,
    private readonly load: () => Promise<unknown> = () => import("@napi-rs/keyring"),
  ) {
    if (service.length === 0 || account.length === 0) {
      throw new CredentialError("the keyring service and account must be non-empty", {
        reason: "FIELD_INVALID",
        metadata: { field: service.length === 0 ? "service" : "account" },
      });
    }
  }

  /** Reads the bearer from the OS keyring (loads `@napi-rs/keyring` on first use). */
  async getBearer(): Promise<string> {
    let keyring: KeyringModule;
    try {
      keyring = (await this.load()) as KeyringModule;
    } catch {
      throw new CredentialError(
        "the OS keyring provider needs the optional package @napi-rs/keyring (npm install @napi-rs/keyring); " +
          "where no keyring exists (headless Linux, CI) enrol with --bearer-fd and pass the bearer through InMemoryCredentialProvider",
        { reason: "KEYRING_UNAVAILABLE" },
      );
    }
    let value: string | null | undefined;
    try {
      value = new keyring.Entry(this.service, this.account).getPassword();
    } catch {
      throw new CredentialError(
        "the OS keyring could not be read (no Secret Service on this machine?); use --bearer-fd enrolment and InMemoryCredentialProvider instead",
        { reason: "KEYRING_UNAVAILABLE", metadata: { service: this.service, account: this.account } },
      );
    }
    if (value === null || value === undefined) {
      throw new CredentialError("the OS keyring has no entry for this service and account", {
        reason: "KEYRING_ENTRY_MISSING",
        metadata: { service: this.service, account: this.account },
      });
    }
    return value;
  }
}

/**
 * Asks the provider and validates the answer; any provider failure becomes a {@link CredentialError}.
 *
 * One rule in every SDK (docs/requirements.md, C8): the SDK's own providers throw their own
 * `CredentialError` with its catalogue reason, which stands; anything another provider
 * throws (a `ColossusError` it built included: its text is the provider's) becomes
 * `PROVIDER_FAILED`, with the provider's error kept only as `cause`, never in the
 * message, `toString()`, `toJSON()` or `util.inspect` output.
 */
export async function loadBearer(provider: CredentialProvider, signal?: AbortSignal): Promise<Bearer> {
  let value: unknown;
  try {
    value = await provider.getBearer(signal);
  } catch (error) {
    if (error instanceof CredentialError && isOwnProvider(provider)) throw error;
    // The provider's own message might contain the secret; it is not repeated.
    throw new CredentialError("the credential provider failed", { reason: "PROVIDER_FAILED", cause: error });
  }
  return new Bearer(value);
}

function isOwnProvider(provider: CredentialProvider): boolean {
  return provider instanceof InMemoryCredentialProvider || provider instanceof KeyringCredentialProvider;
}
