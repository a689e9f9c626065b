/** The injectable logger. The SDK never passes a bearer to it. */

/** Any object with these four methods works, including `console` and most logging libraries. */
export interface Logger {
  /** Fine-grained detail. */
  debug(message: string, fields?: Readonly<Record<string, unknown>>): void;
  /** Normal events: a connection made, a watch reconnecting, a sidecar worker started or stopped. */
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  /** Trouble the SDK works around: a sidecar worker that exited and is restarted. */
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  /** Failures worth an operator's attention. */
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

const noop = (): void => undefined;

/** The default: silent. */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });
