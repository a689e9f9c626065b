package colossus

// Version is the SDK's version.
const Version = "0.1.0"
