// connect-es names the fetch type `HeadersInit` globally; Node's typings keep it in undici-types.
declare global {
  type HeadersInit = import("undici-types").HeadersInit;
}
export {};
