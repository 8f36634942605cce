/**
 * context-host/conformance: reserved for the conformance kit (suites that any registry,
 * plugin or store can be run against). It exports nothing yet; the entry exists so the
 * name is taken and importing it already resolves.
 *
 * @module
 */

export {};
