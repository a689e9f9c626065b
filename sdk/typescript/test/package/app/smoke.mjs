// Loaded in an app that installed colossus-sdk: the ESM entry point and its public names.
import { Client, ColossusError, DEFAULT_RETRY_POLICY, InMemoryCredentialProvider, VERSION } from "colossus-sdk";

if (typeof Client.connect !== "function" || typeof Client.startSidecar !== "function") throw new Error("Client is incomplete");
if (!(new InMemoryCredentialProvider("x".repeat(40)) instanceof InMemoryCredentialProvider)) throw new Error("provider");
if (typeof ColossusError !== "function" || DEFAULT_RETRY_POLICY.maxAttempts !== 5) throw new Error("exports");
console.log(`esm ok ${VERSION}`);
