package colossus

// ReferenceWorker gives the external tests (package colossus_test) the same lookup of the
// reference worker as the internal ones; it exists only in test builds.
var ReferenceWorker = referenceWorker
