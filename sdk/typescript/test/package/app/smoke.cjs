// Loaded in an app that installed colossus-sdk: the CommonJS entry point and its public names.
"use strict";
const { Client, ColossusError, DEFAULT_RETRY_POLICY, InMemoryCredentialProvider, VERSION } = require("colossus-sdk");

if (typeof Client.connect !== "function" || typeof Client.startSidecar !== "function") throw new Error("Client is incomplete");
if (!(new InMemoryCredentialProvider("x".repeat(40)) instanceof InMemoryCredentialProvider)) throw new Error("provider");
if (typeof ColossusError !== "function" || DEFAULT_RETRY_POLICY.maxAttempts !== 5) throw new Error("exports");
console.log(`cjs ok ${VERSION}`);
