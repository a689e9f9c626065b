/** The only endpoints the SDK dials: `https://127.0.0.1:PORT` and `https://[::1]:PORT`. */

const ENDPOINT = /^https:\/\/(127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})$/;

/** A literal loopback TLS endpoint. */
export interface Endpoint {
  /** `127.0.0.1` or `::1` (no brackets). */
  readonly host: string;
  readonly port: number;
  /** The canonical `https://...` form. */
  readonly url: string;
}

/** Parses an endpoint, or returns a sentence saying what was expected. */
export function parseEndpoint(value: unknown): Endpoint | string {
  if (typeof value !== "string") return "endpoint must be a string";
  const match = ENDPOINT.exec(value);
  if (match === null) {
    return "endpoint must be https://127.0.0.1:PORT or https://[::1]:PORT with nothing else";
  }
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return "endpoint port must be between 1 and 65535";
  const host = match[1] === "[::1]" ? "::1" : "127.0.0.1";
  return Object.freeze({ host, port, url: value });
}
